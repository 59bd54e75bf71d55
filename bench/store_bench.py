"""Suspend and decide throughput of the store backends, end to end through the Service.

    python -m bench.store_bench [--n 1000] [--concurrency 1,32] [--backends sqlite,postgres]

Each run uses a fresh store: a SQLite file in a temp directory (WAL, synchronous=FULL, group
commit), or a throwaway PostgreSQL database (created on $HITL_TEST_POSTGRES_URL's server,
dropped afterwards). One process, no HTTP: this measures the store and the use case, not aiohttp.
Results print as a table (`--out FILE` also writes them as JSON); `make bench` runs it too and
puts its rows in the one table and bench/results.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from gateway.core.clock import SystemClock
from gateway.core.models import Outcome
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.testing import make_settings

PG_URL = os.environ.get("HITL_TEST_POSTGRES_URL") or "postgresql://postgres@127.0.0.1:5432/test"


@asynccontextmanager
async def store_url(backend: str) -> AsyncIterator[str]:
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            yield f"sqlite:///{tmp}/bench.db"
        return
    import asyncpg

    name = f"hitl_bench_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(PG_URL)
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        parts = urlsplit(PG_URL)
        yield urlunsplit((parts.scheme, parts.netloc, f"/{name}", "", ""))
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


async def timed(n: int, concurrency: int, op: Callable[[int], Awaitable[object]]) -> dict[str, float]:
    latencies: list[float] = []
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with sem:
            t0 = time.perf_counter()
            await op(i)
            latencies.append(time.perf_counter() - t0)

    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    elapsed = time.perf_counter() - start
    latencies.sort()
    return {
        "per_s": round(n / elapsed, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 2),
    }


async def run(backend: str, n: int, concurrency: int) -> dict[str, object]:
    async with store_url(backend) as url:
        rt = Runtime(make_settings(url), clock=SystemClock(), owner="bench")
        await rt.start(background=False)
        try:
            ids: list[str] = []

            async def suspend(i: int) -> None:
                approval, _ = await rt.service.suspend(
                    SuspendRequest(run_id=f"run-{i}", step="charge", title=f"Charge #{i}", args={"i": i})
                )
                ids.append(approval.id)

            async def decide(i: int) -> None:
                await rt.service.decide(ids[i], Outcome.APPROVE, "web:bench", trusted=True)

            return {
                "backend": backend,
                "concurrency": concurrency,
                "n": n,
                "suspend": await timed(n, concurrency, suspend),
                "decide": await timed(n, concurrency, decide),
            }
        finally:
            await rt.stop()


async def wake_latency(n: int = 200) -> dict[str, float]:
    """Commit on store A (a replica), time until store B's subscriber hears of it."""
    from gateway.core.models import NewOutbox, OutboxKind
    from gateway.service import new_id
    from gateway.store import open_store

    async with store_url("postgres") as url:
        rt = Runtime(make_settings(url), clock=SystemClock(), owner="bench")
        await rt.start(background=False)
        b = open_store(url)
        await b.open()
        heard: asyncio.Queue[float] = asyncio.Queue()
        await b.subscribe(lambda topic, _: heard.put_nowait(time.perf_counter()) if topic == "outbox" else None)
        samples = []
        try:
            for i in range(n):
                approval, _ = await rt.service.suspend(SuspendRequest(run_id=new_id(), step="s", title=f"#{i}"))
                await asyncio.wait_for(heard.get(), 5)  # the suspend's own wake-up
                await asyncio.sleep(0.005)
                while not heard.empty():
                    heard.get_nowait()
                await rt.store.enqueue_outbox([NewOutbox(approval.id, "web", OutboxKind.SYNC)], rt.clock.now())
                committed = time.perf_counter()
                samples.append((await asyncio.wait_for(heard.get(), 5) - committed) * 1000)
        finally:
            await b.close()
            await rt.stop()
    samples.sort()
    return {"p50_ms": round(samples[len(samples) // 2], 2), "p99_ms": round(samples[int(n * 0.99) - 1], 2)}


async def collect(n: int, concurrency: list[int], backends: list[str]) -> dict[str, Any]:
    """Every (backend, concurrency) pair, plus the cross-replica wake-up when Postgres is in."""
    results = [await run(backend, n, c) for backend in backends for c in concurrency]
    wake = await wake_latency() if "postgres" in backends else None
    return {"results": results, "wake": wake}


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--concurrency", default="1,32")
    p.add_argument("--backends", default="sqlite,postgres")
    p.add_argument("--out", type=Path, default=None, help="also write the results as JSON here")
    args = p.parse_args()
    out = await collect(args.n, [int(x) for x in args.concurrency.split(",")], args.backends.split(","))
    print(f"{'backend':<9} {'conc':>4} {'suspend/s':>10} {'p50 ms':>7} {'p99 ms':>7} {'decide/s':>9} {'p50 ms':>7}")
    for r in out["results"]:
        s, d = r["suspend"], r["decide"]
        row = f"{r['backend']:<9} {r['concurrency']:>4} {s['per_s']:>10} {s['p50_ms']:>7} {s['p99_ms']:>7}"
        print(f"{row} {d['per_s']:>9} {d['p50_ms']:>7}")
    wake = out["wake"]
    if wake:
        print(
            f"cross-replica wake-up (commit on A -> B's subscriber): p50 {wake['p50_ms']} ms, p99 {wake['p99_ms']} ms"
        )
    if args.out:
        args.out.write_text(json.dumps({"cpus": os.cpu_count(), **out}, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
