"""HTTP load: N concurrent clients POST /v1/suspend for a fixed time; rate and latency percentiles."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

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


Send = Callable[[int], Awaitable[int]]  # request number -> HTTP status


async def run_load(
    url: str,
    concurrency: int,
    seconds: float,
    warmup: float = 0.5,
    make_body: Callable[[int], dict[str, Any]] | None = None,
    client: str = "raw",
) -> LoadResult:
    """POST /v1/suspend from `concurrency` keep-alive connections for `seconds` after `warmup`;
    count only what finishes inside the window.

    The generator shares the machine's 2 cores with the gateway, so by default it is lean
    (`client="raw"`): asyncio streams, the request bytes built from a template (only the run id
    changes), the response read by its Content-Length; about 30-45 us of CPU per request against
    100-130 us for `client="aiohttp"` (the generator before; `client_cpu_us` in the summary)."""
    tag = uuid.uuid4().hex[:8]
    counter = itertools.count()
    body_for = make_body or (lambda n: suspend_body(f"bench-{tag}-{n}"))
    latencies: list[float] = []
    errors = 0
    cpu0 = time.process_time()
    start = time.perf_counter()
    measure_from = start + warmup
    stop_at = measure_from + seconds
    done = 0

    async def one_client(send: Send) -> None:
        nonlocal errors, done
        while True:
            t0 = time.perf_counter()
            if t0 >= stop_at:
                return
            status = await send(next(counter))
            t1 = time.perf_counter()
            if t0 >= measure_from and t1 <= stop_at:
                done += 1
                latencies.append((t1 - t0) * 1000)
                errors += status not in (200, 201)

    if client == "aiohttp":
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as http:

            async def send(n: int) -> int:
                async with http.post(f"{url}/v1/suspend", json=body_for(n), headers=AUTH) as resp:
                    await resp.read()
                    return resp.status

            await asyncio.gather(*(one_client(send) for _ in range(concurrency)))
    else:
        request = _raw_requests(url, tag, make_body)
        connections = [await _RawConnection.open(url, request) for _ in range(concurrency)]
        try:
            await asyncio.gather(*(one_client(c.send) for c in connections))
        finally:
            for c in connections:
                c.writer.close()
    cpu = time.process_time() - cpu0
    return LoadResult(done, errors, seconds, latencies, client_cpu_s=cpu, client_requests=next(counter))


def _raw_requests(url: str, tag: str, make_body: Callable[[int], dict[str, Any]] | None) -> Callable[[int], bytes]:
    """Request number -> the whole HTTP/1.1 request; by default only the run id is formatted."""
    parts = urlsplit(url)
    head = (
        f"POST /v1/suspend HTTP/1.1\r\nHost: {parts.netloc}\r\nAuthorization: {AUTH['Authorization']}\r\n"
        "Content-Type: application/json\r\nContent-Length: "
    ).encode()
    pre, post = json.dumps(suspend_body("\x00")).encode().split(b"\\u0000")

    def request(n: int) -> bytes:
        if make_body is not None:
            body = json.dumps(make_body(n)).encode()
        else:
            body = b"%s%s%s" % (pre, f"bench-{tag}-{n}".encode(), post)
        return b"%s%d\r\n\r\n%s" % (head, len(body), body)

    return request


@dataclass
class _RawConnection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    request: Callable[[int], bytes]

    @classmethod
    async def open(cls, url: str, request: Callable[[int], bytes]) -> _RawConnection:
        parts = urlsplit(url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port or 80)
        return cls(reader, writer, request)

    async def send(self, n: int) -> int:
        """One request; the response read by its Content-Length (aiohttp's JSON responses)."""
        self.writer.write(self.request(n))
        head = await self.reader.readuntil(b"\r\n\r\n")
        lower = head.lower()
        at = lower.find(b"\r\ncontent-length:")
        if at < 0:
            raise RuntimeError(f"no Content-Length in the response: {head[:200]!r}")
        await self.reader.readexactly(int(head[at + 17 : lower.index(b"\r\n", at + 2)]))
        return int(head[9:12])
