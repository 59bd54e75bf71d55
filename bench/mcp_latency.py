"""What `request_approval` over MCP adds to a direct `POST /v1/suspend` (issue 16).

    python -m bench.mcp_latency [--n 400] [--rounds 8] [--transport stdio|http|both]

One client, one call at a time, a new approval each call (same shape both ways: title, summary,
args, channel web). Direct: aiohttp, keep-alive, `POST /v1/suspend`. MCP: the SDK's real
`ClientSession` calling `request_approval` with `wait_seconds=0` on `hitl-gateway mcp`, over
stdio and over streamable HTTP, which makes the same `POST /v1/suspend` behind it. The two run
in alternating rounds, so that load from other processes on the machine hits both alike.
Prints p50/p90/p99 of each and the added p50; needs the `mcp` extra.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from bench.load import percentile
from bench.server import API_KEY, AUTH, Gateway, free_port

Call = Callable[[int], Awaitable[None]]
ARGS = {"amount": 4200, "currency": "USD", "customer": "cus_123"}


def body(n: int, tag: str) -> dict[str, Any]:
    return {"run_id": f"mcp-bench-{tag}-{n}", "step": "pay", "title": "Charge ACME", "summary": "Invoice", "args": ARGS}


async def direct(url: str, http: aiohttp.ClientSession, tag: str) -> Call:
    async def call(n: int) -> None:
        async with http.post(f"{url}/v1/suspend", json={**body(n, tag), "channels": ["web"]}, headers=AUTH) as r:
            assert r.status == 201, await r.text()
            await r.read()

    return call


def over_mcp(session: ClientSession, tag: str) -> Call:
    async def call(n: int) -> None:
        result = await session.call_tool("request_approval", {**body(n, tag), "channels": ["web"], "wait_seconds": 0})
        assert not result.is_error and result.structured_content["status"] == "waiting_approval", result  # type: ignore[index]

    return call


@asynccontextmanager
async def stdio_session(url: str, workdir: Path) -> AsyncIterator[ClientSession]:
    command = [sys.executable, "-m", "gateway", "mcp", "--gateway", url]
    params = StdioServerParameters(command=command[0], args=command[1:], env={"HITL_API_KEY": API_KEY}, cwd=workdir)
    with (workdir / "mcp.log").open("a") as log:
        async with stdio_client(params, errlog=log) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


@asynccontextmanager
async def http_session(url: str, workdir: Path) -> AsyncIterator[ClientSession]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")}
    command = [sys.executable, "-m", "gateway", "mcp", "--gateway", url, "--http", f"127.0.0.1:{port}"]
    with (workdir / "mcp-http.log").open("a") as log:
        proc = await asyncio.create_subprocess_exec(*command, stdout=log, stderr=log, env=env, cwd=workdir)
    try:
        await listening(port, lambda: proc.returncode is None)
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {API_KEY}"}) as client,
            streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session
    finally:
        proc.kill()
        await proc.wait()


async def listening(port: int, alive: Callable[[], bool], within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        assert alive(), "the MCP server exited; see mcp-http.log"
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep(0.05)
    raise TimeoutError(f"nothing listens on port {port}")


async def timed(call: Call, start: int, count: int) -> list[float]:
    out = []
    for n in range(start, start + count):
        t0 = time.perf_counter()
        await call(n)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def stats(values: list[float]) -> dict[str, float]:
    return {f"p{q}_ms": round(percentile(values, q), 2) for q in (50, 90, 99)} | {"n": len(values)}


async def measure(url: str, workdir: Path, transport: str, n: int, rounds: int) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:8]
    opener = stdio_session if transport == "stdio" else http_session
    samples: dict[str, list[float]] = {"direct": [], "mcp": []}
    async with aiohttp.ClientSession() as http, opener(url, workdir) as session:
        calls = {"direct": await direct(url, http, "d" + tag), "mcp": over_mcp(session, "m" + tag)}
        for call in calls.values():  # warm both paths (connections, imports, caches)
            await timed(call, 10**6, 20)
        per_round = max(1, n // rounds)
        for r in range(rounds):
            for name in ("direct", "mcp") if r % 2 == 0 else ("mcp", "direct"):
                samples[name] += await timed(calls[name], r * per_round, per_round)
    direct_p50, mcp_p50 = percentile(samples["direct"], 50), percentile(samples["mcp"], 50)
    return {
        "transport": transport,
        "direct": stats(samples["direct"]),
        "request_approval": stats(samples["mcp"]),
        "added_p50_ms": round(mcp_p50 - direct_p50, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=400, help="calls per path and transport")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--transport", choices=["stdio", "http", "both"], default="both")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        gw = Gateway(work, work / "gw.db")
        gw.start()
        try:
            transports = ["stdio", "http"] if args.transport == "both" else [args.transport]
            results = [asyncio.run(measure(gw.url, work, t, args.n, args.rounds)) for t in transports]
        finally:
            gw.stop()
    for result in results:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
