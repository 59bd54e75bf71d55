"""The machine description and the one results table."""

from __future__ import annotations

import os
import platform
import sqlite3
from pathlib import Path
from typing import Any


def machine() -> dict[str, Any]:
    cpu = "?"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_kb = 0
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        mem_kb = int(meminfo.read_text().split()[1])
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "ram_gb": round(mem_kb / 1024 / 1024, 1),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "kernel": platform.release(),
        "loadavg_at_start": os.getloadavg(),
    }


def _get(results: dict[str, Any], *path: str) -> Any:
    cur: Any = results
    for key in path:
        if not isinstance(cur, dict) or key not in cur:
            return None
        cur = cur[key]
    return cur


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        text = f"{value:,.1f}" if value >= 100 else f"{value:.2f}"
    else:
        text = f"{value:,}" if isinstance(value, int) else str(value)
    return f"{text}{unit}"


def _verdict(value: Any, ok: bool | None, note: str = "") -> str:
    if value is None:
        return "skipped"
    return ("PASS" if ok else "FAIL") + (f" ({note})" if note else "")


def rows(r: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    out: list[tuple[str, str, str, str, str]] = []
    rate64, p99 = _get(r, "a", "c64_rate"), _get(r, "a", "c64_p99_ms")
    out.append(
        (
            "a",
            "suspend HTTP c=1: rate / p50 / p99",
            f"{_fmt(_get(r, 'a', 'c1_rate'), '/s')} / {_fmt(_get(r, 'a', 'c1_p50_ms'), ' ms')} / "
            f"{_fmt(_get(r, 'a', 'c1_p99_ms'), ' ms')}",
            "-",
            "info" if rate64 is not None else "skipped",
        )
    )
    out.append(
        (
            "a",
            "suspend HTTP c=64: rate / p50 / p99",
            f"{_fmt(rate64, '/s')} / {_fmt(_get(r, 'a', 'c64_p50_ms'), ' ms')} / {_fmt(p99, ' ms')}",
            ">= 3,000/s, p99 <= 50 ms",
            _verdict(rate64, rate64 is not None and rate64 >= 3000 and p99 <= 50),
        )
    )
    cpu = _get(r, "a", "c64_server_cpu_us")
    out.append(
        (
            "a",
            "server CPU per suspend at c=64 (card delivery included)",
            _fmt(cpu, " us"),
            "<= 333 us (1 core at 3,000/s)",
            "info" if cpu is None else _verdict(cpu, cpu <= 333),
        )
    )
    client = _get(r, "a", "c64_client_cpu_us")
    if client is not None:
        out.append(("a", "load generator CPU per suspend at c=64 (same 2 cores)", _fmt(client, " us"), "-", "info"))
    out += _a_pg_rows(r)
    out += _b_rows(r, "b", "SQLite")
    out += _b_rows(r, "b_pg", "Postgres")
    d_s, d_n = _get(r, "d", "seconds"), _get(r, "d", "approvals")
    out.append(
        (
            "d",
            f"timeout storm {_fmt(d_n)} due [{_get(r, 'd', 'mode') or '-'}]",
            _fmt(d_s, " s"),
            "<= 10 s for 10^5",
            _verdict(d_s, d_s is not None and d_s <= 10 * (d_n or 1) / 100_000),
        )
    )
    growth = _get(r, "e", "growth_mb") or {}
    for size, mb in growth.items():
        rss = _get(r, "e", size, "rss_kb")
        out.append(
            (
                "e",
                f"RSS serving, {int(size):,} pending",
                f"{_fmt(rss / 1024 if rss else None, ' MB')} (+{_fmt(mb, ' MB')})",
                "+<= 100 MB at 10^6" if int(size) >= 10**6 else "-",
                _verdict(mb, mb <= 100) if int(size) >= 10**6 else "info",
            )
        )
    f = _get(r, "e", "disk", "bytes_per_approval")
    out.append(
        (
            "f",
            f"disk per pending approval ({_fmt(_get(r, 'e', 'disk', 'approvals'))} bulk)",
            _fmt(f, " B"),
            "<= 1,536 B",
            _verdict(f, f is not None and f <= 1536),
        )
    )
    real = _get(r, "a", "disk_bytes_per_approval_real_path")
    out.append(("f", "disk per approval, rows made by bench a over HTTP", _fmt(real, " B"), "-", "info"))
    g = _get(r, "g", "replay_steps_per_s")
    out.append(
        (
            "g",
            f"journal replay [{_get(r, 'g', 'mode') or '-'}]",
            _fmt(g, " steps/s"),
            ">= 20,000 steps/s",
            _verdict(g, g is not None and g >= 20000),
        )
    )
    out.append(
        (
            "g",
            "journal record (50 agents in parallel)",
            _fmt(_get(r, "g", "record_steps_per_s"), " steps/s"),
            "-",
            "info",
        )
    )
    h_s, h_r = _get(r, "h", "suspend_per_s"), _get(r, "h", "resume_per_s")
    out.append(
        (
            "h",
            "LangGraph SqliteSaver in-process: interrupt / resume",
            _get(r, "h", "skipped") or f"{_fmt(h_s, '/s')} / {_fmt(h_r, '/s')}",
            "-",
            "info",
        )
    )
    if h_s and rate64:
        ratio = rate64 / h_s
        out.append(
            (
                "a/h",
                "our HTTP suspend c=64 / LangGraph in-process interrupt",
                f"{ratio:.1f}x",
                ">= 10x",
                _verdict(ratio, ratio >= 10),
            )
        )
    c1 = _get(r, "a", "c1_rate")
    if h_s and c1:
        out.append(("a/h", "our HTTP suspend c=1 / LangGraph in-process interrupt", f"{c1 / h_s:.2f}x", "-", "info"))
    return out


def _a_pg_rows(r: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    if "a_pg" not in r:
        return []
    skipped = _get(r, "a_pg", "skipped")
    if skipped:
        return [("a", "suspend HTTP on Postgres", skipped, "-", "skipped")]
    return [
        (
            "a",
            f"suspend HTTP c={c}, Postgres: rate / p50 / p99",
            f"{_fmt(_get(r, 'a_pg', f'c{c}_rate'), '/s')} / {_fmt(_get(r, 'a_pg', f'c{c}_p50_ms'), ' ms')} / "
            f"{_fmt(_get(r, 'a_pg', f'c{c}_p99_ms'), ' ms')}",
            "-",
            "info",
        )
        for c in (1, 64)
    ]


def _b_rows(r: dict[str, Any], key: str, backend: str) -> list[tuple[str, str, str, str, str]]:
    """b (full-cycle rate) and c (decision -> worker start), loaded and alone."""
    if key not in r:
        return []
    skipped = _get(r, key, "skipped")
    if skipped:
        return [("b", f"full cycle c=64, {backend}", skipped, ">= 500/s", "skipped")]
    rate, p50 = _get(r, key, "rate"), _get(r, key, "worker_p50_ms")
    alone = _get(r, key, "alone_worker_p50_ms")
    return [
        (
            "b",
            f"full cycle c=64, {backend}: rate / cycle p50 / p99",
            f"{_fmt(rate, '/s')} / {_fmt(_get(r, key, 'cycle_p50_ms'), ' ms')} / "
            f"{_fmt(_get(r, key, 'cycle_p99_ms'), ' ms')}",
            ">= 500/s",
            _verdict(rate, (rate or 0) >= 500),
        ),
        (
            "b",
            f"server CPU per cycle, {backend}: c=64 / alone",
            f"{_fmt(_get(r, key, 'server_cpu_us'), ' us')} / {_fmt(_get(r, key, 'alone_server_cpu_us'), ' us')}",
            "<= 2,000 us (1 core at 500/s)",
            "info",
        ),
        (
            "c",
            f"decision -> worker start under c=64 load, {backend}: p50 / p99",
            f"{_fmt(p50, ' ms')} / {_fmt(_get(r, key, 'worker_p99_ms'), ' ms')}",
            "p50 <= 10 ms",
            _verdict(p50, (p50 if p50 is not None else 99) <= 10),
        ),
        (
            "c",
            f"decision -> worker start, one cycle at a time, {backend}: p50 / p99",
            f"{_fmt(alone, ' ms')} / {_fmt(_get(r, key, 'alone_worker_p99_ms'), ' ms')}",
            "p50 <= 10 ms",
            _verdict(alone, (alone if alone is not None else 99) <= 10),
        ),
    ]


def _extra_rows(r: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """bench/store_bench.py and bench/scheduler_bench.py, folded in."""
    out: list[tuple[str, str, str, str, str]] = []
    for item in _get(r, "store", "results") or []:
        s, d = item["suspend"], item["decide"]
        out.append(
            (
                "store",
                f"Service in process, {item['backend']} c={item['concurrency']}: suspend / decide",
                f"{_fmt(s['per_s'], '/s')} (p99 {_fmt(s['p99_ms'], ' ms')}) / {_fmt(d['per_s'], '/s')}",
                "-",
                "info",
            )
        )
    wake = _get(r, "store", "wake")
    if wake:
        out.append(
            (
                "store",
                "Postgres cross-replica wake-up p50 / p99",
                f"{wake['p50_ms']} / {wake['p99_ms']} ms",
                "-",
                "info",
            )
        )
    sched = r.get("sched")
    if isinstance(sched, dict) and "storm" in sched:
        out.append(
            (
                "sched",
                f"Runtime RSS, 0 -> {sched['n']:,} pending (APScheduler jobs {sched['jobs0']} -> {sched['jobs_n']})",
                f"{_fmt(sched['rss0_kib'] / 1024, ' MB')} -> {_fmt(sched['rss_n_kib'] / 1024, ' MB')}",
                "-",
                "info",
            )
        )
        storm = sched["storm"]
        out.append(
            (
                "sched",
                f"one scheduler.tick, {sched['n']:,} due (CPU {storm['cpu_seconds']} s)",
                f"{_fmt(storm['seconds'], ' s')} ({storm['timed_out']:,} timed out, lost {storm['lost']})",
                "-",
                "info",
            )
        )
    return out


def table(results: dict[str, Any]) -> str:
    body = rows(results) + _extra_rows(results)
    headers = ("", "measure", "median of runs", "target", "verdict")
    widths = [max(len(headers[i]), *(len(row[i]) for row in body)) for i in range(5)]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    m = results.get("machine", {})
    head = (
        f"hitl-gateway bench: {m.get('nproc')} CPU ({m.get('cpu')}), {m.get('ram_gb')} GB RAM, Python "
        f"{m.get('python')}, SQLite {m.get('sqlite')}, median of {results.get('runs')} run(s)"
    )
    out = [head, line.format(*headers), line.format(*("-" * w for w in widths))]
    out += [line.format(*row) for row in body]
    return "\n".join(out)
