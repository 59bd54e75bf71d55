"""Live pages: /live streams a `change` when anything is recorded; the pages load one script
from 'self' and mark the regions it refreshes. (tests/acceptance/test_live_browser.py runs the
script in Chromium.)"""

from __future__ import annotations

import asyncio
from typing import Any

from gateway.core.models import Outcome
from gateway.http.web.inbox import LIVE
from gateway.http.web.subapp import WEB_APP
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from tests.web.conftest import sign_in


async def _next_event(resp: Any) -> str:
    async with asyncio.timeout(5):
        while True:
            line = (await resp.content.readline()).decode()
            if line.startswith("event: "):
                return line.removeprefix("event: ").strip()


async def test_the_stream_says_change_when_a_decision_is_recorded(web: Any, web_rt: Runtime) -> None:
    web.app[WEB_APP][LIVE].poll = 0.02
    approval, _ = await web_rt.service.suspend(SuspendRequest("run-1", "pay", "Pay ACME"))
    assert (await web.get("/live", allow_redirects=False)).status == 303  # signed out: to /login
    await sign_in(web)
    resp = await web.get("/live")
    assert resp.status == 200 and resp.headers["Content-Type"] == "text/event-stream"
    assert (await resp.content.readline()).startswith(b"retry:")
    await asyncio.sleep(0.1)  # the feed has seen the newest event id
    await web_rt.service.decide(approval.id, Outcome.APPROVE, "web:bob", channel="web")
    assert await _next_event(resp) == "change"
    resp.close()
    await asyncio.sleep(0.1)
    assert web.app[WEB_APP][LIVE].open_streams == 0  # the stream that went away is forgotten


async def test_pages_load_the_script_under_a_strict_csp_and_mark_live_regions(web: Any, web_rt: Runtime) -> None:
    approval, _ = await web_rt.service.suspend(SuspendRequest("run-1", "pay", "Pay ACME", policy="fast"))
    await sign_in(web)
    page = await web.get(f"/approvals/{approval.id}")
    html, csp = await page.text(), page.headers["Content-Security-Policy"]
    assert '<script src="/static/live.js" defer></script>' in html and "<script>" not in html
    assert "script-src 'self'" in csp and "connect-src 'self'" in csp and "unsafe-inline" not in csp
    for region in ("state", "decide", "cards", "timeline"):
        assert f'data-live="{region}"' in html
    assert 'data-deadline="2030-01-01T12:01:00+00:00"' in html  # the countdown ticks from this
    assert 'data-live="rows"' in await (await web.get("/")).text()
    script = await web.get("/static/live.js")
    assert script.status == 200 and "EventSource" in await script.text()
