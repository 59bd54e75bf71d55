"""`make bench`: every measurement, median of 3 runs, one table, bench/results.json.

python -m bench                 # everything (several minutes)
python -m bench --only a,e      # some of them
python -m bench --quick         # small sizes, one run: a smoke test of the harness
python -m bench --postgres off  # a and b on SQLite only (default: also on Postgres when reachable)

Letters: a-h as in issue 9; `store` = bench/store_bench.py (Service suspend/decide in process, per
backend), `sched` = bench/scheduler_bench.py (RSS of a Runtime with N pending, one-tick storm).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import cycle, inproc, langgraph_bench, pg, scheduler_bench, store_bench
from bench.bulk import bytes_per_approval, insert_pending, migrate
from bench.load import run_load
from bench.report import machine, table
from bench.server import Gateway

RESULTS = Path(__file__).with_name("results.json")


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per key, the median of the numeric values (the first run's value otherwise)."""
    out: dict[str, Any] = {}
    for key, first in runs[0].items():
        values = [r[key] for r in runs if isinstance(r.get(key), int | float) and not isinstance(r.get(key), bool)]
        out[key] = round(statistics.median(values), 3) if len(values) == len(runs) else first
    out["runs"] = len(runs)
    for key in ("rate", "c1_rate", "c64_rate"):  # the spread of the headline rates, for the noise
        if key in out:
            out[f"{key}_per_run"] = [r.get(key) for r in runs]
    return out


def repeat(n: int, fn: Callable[[int], dict[str, Any]]) -> dict[str, Any]:
    return median_of([fn(i) for i in range(n)])


def bench_a(tmp: Path, runs: int, seconds: float, store_url: Callable[[], Any] | None = None) -> dict[str, Any]:
    """Suspend over HTTP; on SQLite by default, or on a fresh database from `store_url()` each run."""

    def one(i: int) -> dict[str, Any]:
        work = tmp / f"a{'pg' if store_url else ''}{i}"
        work.mkdir()
        if store_url is not None:
            with store_url() as url:
                return _a_once(work, seconds, url)
        return _a_once(work, seconds, None)

    return repeat(runs, one)


def _a_once(work: Path, seconds: float, url: str | None) -> dict[str, Any]:
    gw = Gateway(work, work / "gateway.db", store_url=url)
    gw.start()
    try:
        c1 = asyncio.run(run_load(gw.url, 1, seconds / 2)).summary()
        cpu0 = gw.cpu_seconds()
        c64 = asyncio.run(run_load(gw.url, 64, seconds, warmup=0.0)).summary()
        # Server CPU per suspend, its outbox delivery of the web card included: what bounds the rate.
        c64["server_cpu_us"] = round((gw.cpu_seconds() - cpu0) / max(1, c64["requests"]) * 1e6, 1)
    finally:
        gw.stop()
    out = {**{f"c1_{k}": v for k, v in c1.items()}, **{f"c64_{k}": v for k, v in c64.items()}}
    if url is None:
        out["disk_bytes_per_approval_real_path"] = bytes_per_approval(work / "gateway.db")["bytes_per_approval"]
    return out


def bench_b(tmp: Path, runs: int, seconds: float, store_url: Callable[[], Any] | None = None) -> dict[str, Any]:
    """The full cycle and decision -> worker start (b and c), SQLite or a fresh Postgres database."""

    def one(i: int) -> dict[str, Any]:
        work = tmp / f"b{'pg' if store_url else ''}{i}"
        if store_url is None:
            return cycle.run(work, seconds=seconds)
        with store_url() as url:
            return cycle.run(work, seconds=seconds, store_url=url)

    return repeat(runs, one)


def bench_e(tmp: Path, runs: int, sizes: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for size in sizes:
        work = tmp / f"e{size}"
        work.mkdir()
        db = work / "gateway.db"
        migrate(db)
        load_s = insert_pending(db, size) if size else 0.0

        def one(i: int, work: Path = work, db: Path = db) -> dict[str, Any]:
            gw = Gateway(work, db)
            gw.start()
            try:
                asyncio.run(_touch(gw))
                return {"rss_kb": gw.rss_kb()}
            finally:
                gw.stop()

        out[str(size)] = {**repeat(runs, one), "bulk_insert_s": round(load_s, 1)}
        if size == max(sizes):
            out["disk"] = bytes_per_approval(db)
    base = out[str(min(sizes))]["rss_kb"]
    out["growth_mb"] = {k: round((v["rss_kb"] - base) / 1024, 1) for k, v in out.items() if k.isdigit()}
    return out


async def _touch(gw: Gateway) -> None:
    """A few requests of each kind, so the process has done real work before RSS is read."""
    import aiohttp

    from bench.load import suspend_body
    from bench.server import AUTH

    async with aiohttp.ClientSession(headers=AUTH) as http:
        for n in range(20):
            async with http.post(f"{gw.url}/v1/suspend", json=suspend_body(f"touch-{n}-{time.time()}")) as r:
                body = await r.json()
            async with http.get(f"{gw.url}/v1/approvals/{body['id']}") as r:
                await r.read()
            async with http.get(f"{gw.url}/v1/approvals?status=waiting_approval&limit=100") as r:
                await r.read()
            async with http.get(f"{gw.url}/readyz") as r:
                await r.read()
        await asyncio.sleep(1.0)  # let the outbox deliver the cards


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench")
    p.add_argument("--only", default="a,b,c,d,e,f,g,h,store,sched", help="comma-separated letters")
    p.add_argument("--postgres", choices=("auto", "off"), default="auto", help="also run a and b on Postgres")
    p.add_argument("--quick", action="store_true", help="small sizes, one run")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args()
    only = set(args.only.split(","))
    runs = 1 if args.quick else args.runs
    storm_n = 10_000 if args.quick else 100_000
    sizes = [0, 10_000, 100_000] if args.quick else [0, 100_000, 1_000_000]
    seconds = 2.0 if args.quick else 5.0
    results: dict[str, Any] = {"machine": machine(), "runs": runs, "quick": args.quick, "started": time.time()}
    no_pg = "off (--postgres off)" if args.postgres == "off" else pg.reachable()
    cycle_s = 4.0 if args.quick else 10.0
    with tempfile.TemporaryDirectory(prefix="hitl-bench-") as tmpdir:
        tmp = Path(tmpdir)
        steps: list[tuple[str, Callable[[], dict[str, Any]]]] = [
            ("a", lambda: bench_a(tmp, runs, seconds)),
            ("a_pg", lambda: {"skipped": no_pg} if no_pg else bench_a(tmp, runs, seconds, pg.database)),
            ("b", lambda: bench_b(tmp, runs, cycle_s)),
            ("b_pg", lambda: {"skipped": no_pg} if no_pg else bench_b(tmp, runs, cycle_s, pg.database)),
            ("d", lambda: repeat(runs, lambda i: inproc.storm(_sub(tmp, f"d{i}"), storm_n))),
            ("e", lambda: bench_e(tmp, runs, sizes)),
            ("g", lambda: repeat(runs, lambda i: inproc.journal(_sub(tmp, f"g{i}")))),
            ("h", lambda: _langgraph(tmp, runs, 300 if args.quick else 1000)),
            ("store", lambda: _store(200 if args.quick else 1000, "off" if no_pg else "on")),
            ("sched", lambda: scheduler_bench.collect(10_000 if args.quick else 100_000)),
        ]
        for key, fn in steps:
            letter = key.removesuffix("_pg")
            if letter in only or (letter == "b" and "c" in only) or (key == "e" and "f" in only):
                t0 = time.perf_counter()
                print(f"bench {key} ...", flush=True)
                results[key] = fn()
                print(f"bench {key}: {time.perf_counter() - t0:.1f}s {json.dumps(results[key])[:300]}", flush=True)
    args.out.write_text(json.dumps(results, indent=2, sort_keys=True))
    print()
    print(table(results))
    print(f"\nwritten: {args.out}")
    return 0


def _store(n: int, postgres: str) -> dict[str, Any]:
    """bench/store_bench.py, once (it is in process and quick): SQLite, and Postgres when reachable."""
    backends = ["sqlite"] if postgres == "off" else ["sqlite", "postgres"]
    return asyncio.run(store_bench.collect(n, [1, 32], backends))


def _sub(tmp: Path, name: str) -> Path:
    path = tmp / name
    path.mkdir(exist_ok=True)
    return path


def _langgraph(tmp: Path, runs: int, count: int) -> dict[str, Any]:
    if not langgraph_bench.available():
        return {"skipped": "langgraph and langgraph-checkpoint-sqlite are not installed (pip install -e '.[bench]')"}
    return repeat(runs, lambda i: langgraph_bench.run(_sub(tmp, f"h{i}"), count))


if __name__ == "__main__":
    raise SystemExit(main())
