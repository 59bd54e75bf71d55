"""The inbox's live stream (/live) outlived its session: after a logout (or a new password, or
the user's removal) an open stream went on telling that browser whenever anything was recorded.
The session is asked again at each heartbeat, and a stream whose session ended closes."""

from __future__ import annotations

import asyncio
from typing import Any

from gateway.http.web.inbox import LIVE
from gateway.http.web.subapp import WEB_APP
from tests.web.conftest import csrf_of, sign_in, web, web_rt, web_settings  # noqa: F401 (fixtures)


async def _until_closed(resp: Any) -> None:
    while await resp.content.readline():
        pass


async def test_a_live_stream_ends_with_its_session(web: Any) -> None:  # noqa: F811
    web.app[WEB_APP][LIVE].heartbeat = 0.05
    await sign_in(web)
    resp = await web.get("/live")
    assert resp.status == 200 and (await resp.content.readline()).startswith(b"retry:")
    await asyncio.sleep(0.2)  # heartbeats while signed in: the stream goes on
    assert not resp.content.at_eof()
    await web.post("/logout", data={"csrf": csrf_of(await (await web.get("/")).text())})
    await asyncio.wait_for(_until_closed(resp), 5)  # before: keep-alives for as long as it stayed open
    await asyncio.sleep(0.05)
    assert web.app[WEB_APP][LIVE].open_streams == 0
