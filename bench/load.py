"""HTTP load: N concurrent clients POST /v1/suspend for a fixed time; rate and latency percentiles."""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from bench.server import AUTH


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of unsorted values; 0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def suspend_body(run_id: str, step: str = "charge", **over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "run_id": run_id,
        "step": step,
        "title": "Charge ACME $42",
        "summary": "Monthly invoice for ACME Corp, plan Pro, 3 seats",
        "args": {"amount": 4200, "currency": "USD", "customer": "cus_123"},
        "state": {"cursor": 3, "messages": ["draft invoice", "ask approval"]},
        "channels": ["web"],
    }
    body.update(over)
    return body


@dataclass
class LoadResult:
    requests: int
    errors: int
    seconds: float
    latencies_ms: list[float]

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def summary(self) -> dict[str, float]:
        return {
            "rate": round(self.rate, 1),
            "p50_ms": round(percentile(self.latencies_ms, 50), 2),
            "p99_ms": round(percentile(self.latencies_ms, 99), 2),
            "requests": self.requests,
            "errors": self.errors,
        }


async def run_load(
    url: str,
    concurrency: int,
    seconds: float,
    warmup: float = 0.5,
    make_body: Callable[[int], dict[str, Any]] | None = None,
) -> LoadResult:
    """POST /v1/suspend from `concurrency` loops; count only what finishes after the warm-up."""
    tag = uuid.uuid4().hex[:8]
    counter = itertools.count()
    body_for = make_body or (lambda n: suspend_body(f"bench-{tag}-{n}"))
    latencies: list[float] = []
    errors = 0
    start = time.perf_counter()
    measure_from = start + warmup
    stop_at = measure_from + seconds
    done = 0

    async def one_client(http: aiohttp.ClientSession) -> None:
        nonlocal errors, done
        while True:
            t0 = time.perf_counter()
            if t0 >= stop_at:
                return
            async with http.post(f"{url}/v1/suspend", json=body_for(next(counter)), headers=AUTH) as resp:
                await resp.read()
                ok = resp.status in (200, 201)
            t1 = time.perf_counter()
            if t0 >= measure_from and t1 <= stop_at:
                done += 1
                latencies.append((t1 - t0) * 1000)
                errors += not ok

    connector = aiohttp.TCPConnector(limit=concurrency, force_close=False)
    async with aiohttp.ClientSession(connector=connector) as http:
        await asyncio.gather(*(one_client(http) for _ in range(concurrency)))
    return LoadResult(done, errors, seconds, latencies)
