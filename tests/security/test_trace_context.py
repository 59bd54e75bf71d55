"""A caller's trace context goes on to the worker only as a checked W3C value: a `tracestate`
carrying a line break cannot add a header to a `url` worker's request, and a malformed
`traceparent` is stored as nothing. Against a real serve, whose worker calls a real receiver."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.security.conftest import ALICE, BILLING, Launch, call, db_path, suspend_body

pytestmark = pytest.mark.subprocess
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


async def test_a_tracestate_with_a_line_break_adds_no_header_to_the_worker_s_request(
    aiohttp_server: Callable[..., Any], launch: Launch
) -> None:
    got: list[dict[str, str]] = []

    async def hook(request: web.Request) -> web.Response:
        got.append(dict(request.headers))
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/hook", hook)
    receiver = await aiohttp_server(app)
    extra = f'[workers.hook]\nurl = "http://127.0.0.1:{receiver.port}/hook"\nallowed_hosts = ["127.0.0.1"]\n'
    gw = await asyncio.to_thread(launch, extra=extra)
    async with aiohttp.ClientSession() as http:
        bad = {"traceparent": TRACEPARENT, "tracestate": "a=1\r\nX-Injected: yes"}
        status, body = await call(
            http, "POST", f"{gw.url}/v1/suspend", json=suspend_body(worker="hook", **bad), headers=BILLING
        )
        assert status == 201, body
        approval_id = body["id"]
        malformed = suspend_body("inv-2", traceparent=TRACEPARENT + "\nHITL_RESUME_TOKEN=stolen")
        status, other = await call(http, "POST", f"{gw.url}/v1/suspend", json=malformed, headers=BILLING)
        assert status == 201, other
        decision = {"outcome": "approve"}
        status, _ = await call(
            http, "POST", f"{gw.url}/v1/approvals/{approval_id}/decision", json=decision, headers=ALICE
        )
        assert status == 200
    for _ in range(200):
        if got:
            break
        await asyncio.sleep(0.05)
    (headers,) = got
    assert headers["traceparent"] == TRACEPARENT
    assert "X-Injected" not in headers and "tracestate" not in {k.lower() for k in headers}
    with sqlite3.connect(f"file:{db_path(gw)}?mode=ro", uri=True) as conn:
        rows = dict(conn.execute("SELECT id, traceparent FROM approvals").fetchall())
    assert rows == {approval_id: TRACEPARENT, other["id"]: None}
