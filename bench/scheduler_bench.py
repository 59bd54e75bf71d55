"""Scheduler benchmark (not a test): RSS with N pending approvals vs 0, and an N-deadline storm.

    python -m bench.scheduler_bench            # N = 100000
    python -m bench.scheduler_bench -n 20000

1. RSS: a fresh process starts a Runtime with its APScheduler-driven SLA scheduler on a SQLite
   file holding 0, then N, pending approvals (deadlines an hour away), waits for the start-up
   tick, and reports its resident set size and how many APScheduler jobs it holds.
2. Storm: N deadlines fall due at once; one `tick(now)` applies them all (FakeClock).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gateway.core.models import Approval, Policy
from gateway.runtime import Runtime
from gateway.store.rows import approval_values
from gateway.store.sql import queries
from gateway.testing import FakeClock, make_approval, make_settings


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


def _approval(i: int, now: datetime, deadline: datetime) -> Approval:
    return make_approval(Policy(name="bench", timeout=deadline - now), now, i)


async def _migrate(path: Path) -> None:
    rt = Runtime(make_settings(f"sqlite:///{path}"))
    await rt.start(background=False)
    await rt.stop()


def fill(path: Path, n: int, now: datetime, deadline: datetime) -> None:
    """Insert n pending approvals straight into the table (fast, same codec as the store)."""
    asyncio.run(_migrate(path))
    conn = sqlite3.connect(path)
    with conn:
        for start in range(0, n, 10_000):
            rows = [(*approval_values(_approval(i, now, deadline)), "") for i in range(start, min(n, start + 10_000))]
            conn.executemany(queries("sqlite").insert_approval, rows)
    conn.close()


async def _child(path: str) -> dict[str, Any]:
    rt = Runtime(make_settings(f"sqlite:///{path}"))
    await rt.start(background=True)
    try:
        for _ in range(500):
            if rt.scheduler.last_report is not None:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.5)
        counts = await rt.store.count_by_status()
        return {"rss_kib": rss_kib(), "jobs": len(rt.scheduler.jobs()), "pending": counts.get("waiting_approval", 0)}
    finally:
        await rt.stop()


def measure_rss(path: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.scheduler_bench", "--child", str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


async def storm(path: Path, n: int, deadline: datetime) -> dict[str, Any]:
    clock = FakeClock(deadline + timedelta(seconds=1))
    rt = Runtime(make_settings(f"sqlite:///{path}"), clock=clock, owner="bench")
    await rt.start(background=False)
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        report = await rt.scheduler.tick(clock.now())
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
        counts = await rt.store.count_by_status()
    finally:
        await rt.stop()
    return {
        "applied": dict(report.applied),
        "lost": report.lost,
        "errors": report.errors,
        "seconds": round(elapsed, 2),
        "cpu_seconds": round(cpu, 2),
        "per_second": round(n / elapsed),
        "timed_out": counts.get("timed_out", 0),
    }


def collect(n: int) -> dict[str, Any]:
    """RSS of a Runtime with 0 and n pending approvals (and its APScheduler jobs), then the storm."""
    now = datetime.now(UTC)
    with tempfile.TemporaryDirectory() as tmp:
        empty, full = Path(tmp) / "empty.db", Path(tmp) / "full.db"
        fill(empty, 0, now, now + timedelta(hours=1))
        t0 = time.perf_counter()
        fill(full, n, now, now + timedelta(hours=1))
        fill_s = time.perf_counter() - t0
        rss0, rss_n = measure_rss(empty), measure_rss(full)
        result = asyncio.run(storm(full, n, now + timedelta(hours=1)))
    return {
        "n": n,
        "fill_s": round(fill_s, 1),
        "rss0_kib": rss0["rss_kib"],
        "rss_n_kib": rss_n["rss_kib"],
        "jobs0": rss0["jobs"],
        "jobs_n": rss_n["jobs"],
        "pending": rss_n["pending"],
        "growth_mib": round((rss_n["rss_kib"] - rss0["rss_kib"]) / 1024, 1),
        "storm": result,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=100_000)
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_child(args.child))))
        return
    r = collect(args.n)
    print(f"filled {args.n} pending approvals in {r['fill_s']}s")
    print(f"RSS with 0 pending:      {r['rss0_kib'] / 1024:.1f} MiB, APScheduler jobs {r['jobs0']}")
    print(f"RSS with {r['pending']} pending: {r['rss_n_kib'] / 1024:.1f} MiB, APScheduler jobs {r['jobs_n']}")
    print(f"difference: {r['growth_mib']:+.1f} MiB")
    result = r["storm"]
    print(
        f"storm: {result['timed_out']} of {args.n} deadlines applied by one tick in {result['seconds']}s"
        f" ({result['per_second']}/s, {result['cpu_seconds']}s CPU);"
        f" lost={result['lost']} errors={result['errors']}"
    )
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
