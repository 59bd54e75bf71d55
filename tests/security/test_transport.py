"""Slow clients cannot hold connections: request-head and body deadlines on a real gateway.

Issue 13's finding "half-open connections are held forever, with no header or body read
timeout". These gateways run with `server.header_timeout = "2s"` and `server.body_timeout = "2s"`.
"""

from __future__ import annotations

import asyncio
import json
import time

import aiohttp
import pytest

from tests.procs import Gateway
from tests.security.conftest import BILLING_KEY, CHATS, TG_SECRET, Launch, suspend_body

pytestmark = pytest.mark.subprocess  # every test here starts a process

HEAD = b"POST /v1/suspend HTTP/1.1\r\nHost: 127.0.0.1\r\n"


async def _closed_after(reader: asyncio.StreamReader, within: float) -> tuple[float, bytes]:
    """Read until the server closes the connection; (seconds it took, what it sent)."""
    start, data = time.monotonic(), b""
    try:
        async with asyncio.timeout(within):
            while chunk := await reader.read(65536):
                data += chunk
    except ConnectionResetError:
        pass
    return time.monotonic() - start, data


async def test_a_slowloris_head_is_cut_off(gateway: Gateway) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", gateway.port)
    writer.write(HEAD)

    async def trickle() -> None:
        for i in range(40):  # one more header byte every 0.25 s: never a complete head
            await asyncio.sleep(0.25)
            writer.write(b"X-Slow-%d: 1\r\n" % i if i % 2 else b"X")

    dripping = asyncio.create_task(trickle())
    took, data = await _closed_after(reader, within=8)
    dripping.cancel()
    writer.close()
    assert data == b"" and 1.5 <= took <= 5, (took, data)  # closed at the 2 s deadline, no answer


async def test_a_silent_connection_is_closed(gateway: Gateway) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", gateway.port)
    took, data = await _closed_after(reader, within=8)
    writer.close()
    assert data == b"" and 1.5 <= took <= 5, (took, data)


async def test_a_slow_body_gets_408_and_the_connection_closes(gateway: Gateway) -> None:
    body = json.dumps(suspend_body("slow-body")).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", gateway.port)
    writer.write(
        HEAD + b"Authorization: Bearer " + BILLING_KEY.encode() + b"\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body) + body[:10]
    )
    await writer.drain()
    took, data = await _closed_after(reader, within=8)
    writer.close()
    assert data.startswith(b"HTTP/1.1 408"), data
    assert b'"request_timeout"' in data and 1.5 <= took <= 5, (took, data)  # closed at once: no lingering


async def test_an_idle_keep_alive_connection_outlives_the_head_deadline(gateway: Gateway) -> None:
    """The head clock starts at a request's first byte: a quiet keep-alive connection between two
    requests (a load balancer's pool) is governed by server.keepalive_timeout (75 s), not by it."""
    reader, writer = await asyncio.open_connection("127.0.0.1", gateway.port)
    for pause in (0, 3):  # the second request comes 3 s after the first: past the 2 s head deadline
        await asyncio.sleep(pause)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        assert head.startswith(b"HTTP/1.1 200"), head
        length = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[1])
        assert b'"ok"' in await reader.readexactly(length)
    writer.close()


async def test_held_connections_do_not_stop_others(gateway: Gateway) -> None:
    held = [await asyncio.open_connection("127.0.0.1", gateway.port) for _ in range(50)]
    for _, writer in held:
        writer.write(HEAD)
    async with aiohttp.ClientSession() as http, http.get(f"{gateway.url}/healthz") as resp:
        assert resp.status == 200
    closed = await asyncio.gather(*(_closed_after(reader, within=8) for reader, _ in held))
    assert all(took <= 5 for took, _ in closed)
    for _, writer in held:
        writer.close()


async def test_a_webhook_checks_its_secret_before_the_slow_body_and_a_signed_slow_body_is_cut(launch: Launch) -> None:
    gw = launch(extra=CHATS)
    head = b"POST /webhooks/telegram HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    for secret, status, at_most in ((b"", b"401", 1.0), (TG_SECRET.encode(), b"408", 5.0)):
        reader, writer = await asyncio.open_connection("127.0.0.1", gw.port)
        secret_header = b"X-Telegram-Bot-Api-Secret-Token: " + secret + b"\r\n" if secret else b""
        writer.write(head + secret_header + b"Content-Length: 1000\r\n\r\n{")  # then nothing more
        await writer.drain()
        start = time.monotonic()
        line = await asyncio.wait_for(reader.readline(), 8)
        writer.close()
        assert line.startswith(b"HTTP/1.1 " + status) and time.monotonic() - start <= at_most, line
