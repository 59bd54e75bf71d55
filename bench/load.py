"""HTTP load: N concurrent clients POST /v1/suspend for a fixed time; rate and latency percentiles."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

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
    client_cpu_s: float = 0.0  # the generator's own CPU (this process), for all it sent
    client_requests: int = 0

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
            "client_cpu_us": round(self.client_cpu_s / max(1, self.client_requests) * 1e6, 1),
        }


async def run_load(
    url: str,
    concurrency: int,
    seconds: float,
    warmup: float = 0.5,
    make_body: Callable[[int], dict[str, Any]] | None = None,
) -> LoadResult:
    """POST /v1/suspend from `concurrency` keep-alive connections for `seconds` after `warmup`;
    count only what finishes inside the window.

    The generator shares the machine's 2 cores with the gateway, so it is kept lean: raw asyncio
    streams, the request bytes built from a template (only the run id changes), the response
    read by its Content-Length. About a quarter of the CPU of an aiohttp client per request
    (`client_cpu_us` in the result), which is CPU the gateway gets back."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    tag = uuid.uuid4().hex[:8]
    counter = itertools.count()
    head = (
        f"POST /v1/suspend HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: {AUTH['Authorization']}\r\n"
        "Content-Type: application/json\r\nContent-Length: "
    ).encode()
    pre, post = json.dumps(suspend_body("\x00")).encode().split(b"\\u0000")

    def request(n: int) -> bytes:
        if make_body is not None:
            body = json.dumps(make_body(n)).encode()
        else:
            body = b"%s%s%s" % (pre, f"bench-{tag}-{n}".encode(), post)
        return b"%s%d\r\n\r\n%s" % (head, len(body), body)

    latencies: list[float] = []
    errors = 0
    cpu0 = time.process_time()
    start = time.perf_counter()
    measure_from = start + warmup
    stop_at = measure_from + seconds
    done = 0

    async def one_client() -> None:
        nonlocal errors, done
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while True:
                t0 = time.perf_counter()
                if t0 >= stop_at:
                    return
                writer.write(request(next(counter)))
                status, _ = await _response(reader)
                t1 = time.perf_counter()
                if t0 >= measure_from and t1 <= stop_at:
                    done += 1
                    latencies.append((t1 - t0) * 1000)
                    errors += status not in (200, 201)
        finally:
            writer.close()

    await asyncio.gather(*(one_client() for _ in range(concurrency)))
    cpu = time.process_time() - cpu0
    return LoadResult(done, errors, seconds, latencies, client_cpu_s=cpu, client_requests=next(counter))


async def _response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """One HTTP/1.1 response with a Content-Length (what aiohttp sends for a JSON body)."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    lower = head.lower()
    at = lower.find(b"\r\ncontent-length:")
    if at < 0:
        raise RuntimeError(f"no Content-Length in the response: {head[:200]!r}")
    end = lower.index(b"\r\n", at + 2)
    return status, await reader.readexactly(int(head[at + 17 : end]))
