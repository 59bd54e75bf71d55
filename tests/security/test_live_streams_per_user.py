"""The inbox's live stream (/live) had no limit per user: each stream costs a queue, a task and,
every heartbeat, a session read, so one signed-in person (or a stolen cookie) could open
thousands. A user now holds at most `[web] live_streams_per_user` streams in a process; a new one
beyond that ends the user's oldest, which is told not to reconnect. Streams that end (the page
went away, the session ended) free their slot at once, so moving between pages ends nobody's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp.test_utils import BaseTestServer, TestClient, TestServer
from aiohttp.web_runner import AppRunner, BaseRunner

from gateway.config import Settings
from gateway.core.errors import ConfigError
from gateway.http.app import create_app
from gateway.http.web.inbox import LIVE
from gateway.http.web.live import LiveFeed
from gateway.http.web.subapp import WEB_APP
from gateway.runtime import Runtime
from tests.web.conftest import HASH, WEB, csrf_of, sign_in, web, web_rt  # noqa: F401 (fixtures)

CAP = 3


@pytest.fixture
def web_settings(settings_factory: Callable[..., Settings]) -> Settings:
    passwords = {"alice": HASH, "bob": HASH, "victor": HASH}
    return settings_factory(web={**WEB, "passwords": passwords, "live_streams_per_user": CAP})


class _AsServed(TestServer):
    """The test server as `serve` runs the app: a handler is not cancelled when its client goes
    (aiohttp's test server cancels it, which would hide a stream that never notices)."""

    async def _make_runner(self, **kwargs: Any) -> BaseRunner:
        kwargs["handler_cancellation"] = False
        return AppRunner(self.app, **kwargs)


@pytest.fixture
async def served(web_settings: Settings, web_rt: Runtime) -> AsyncIterator[TestClient[Any, Any]]:  # noqa: F811
    server: BaseTestServer = _AsServed(create_app(web_settings, runtime=web_rt, background=False))
    client: TestClient[Any, Any] = TestClient(server)
    await client.start_server()
    try:
        yield client
    finally:
        await client.close()


def _feed(client: TestClient[Any, Any]) -> LiveFeed:
    app = client.app
    assert app is not None
    feed: LiveFeed = app[WEB_APP][LIVE]
    return feed


async def _open(client: TestClient[Any, Any], **headers: str) -> Any:
    resp = await client.get("/live", headers=headers)
    assert resp.status == 200 and (await resp.content.readline()).startswith(b"retry:")  # subscribed
    return resp


async def _rest(resp: Any) -> str:
    """What a stream sends until it ends (a stream that does not end within 5 s fails the test)."""
    lines = []
    async with asyncio.timeout(5):
        while line := await resp.content.readline():
            lines.append(line.decode())
    return "".join(lines)


async def _until(check: Callable[[], bool]) -> None:
    """Within 5 s (the stream notices each poll, set to 20 ms here; its heartbeat is 15 s)."""
    for _ in range(500):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("not within 5 s")


def test_the_cap_is_at_least_one(settings_factory: Callable[..., Any]) -> None:
    with pytest.raises(ConfigError) as refused:
        settings_factory(web={**WEB, "live_streams_per_user": 0})
    assert "web.live_streams_per_user" in str(refused.value)


async def test_a_user_beyond_the_cap_ends_their_oldest_stream(web: Any, aiohttp_client: Any) -> None:  # noqa: F811
    feed = _feed(web)
    await sign_in(web)
    streams = [await _open(web) for _ in range(CAP)]
    other = await aiohttp_client(web.server)  # bob, in another browser, on the same process
    await sign_in(other, "bob")
    bobs = await _open(other)

    for _ in range(3 * CAP):  # before: every one of them stayed open
        streams.append(await _open(web))
        ended = await _rest(streams.pop(0))
        assert "id: replaced\nevent: replaced\n" in ended  # the page is told why, and not to come back
    assert feed.streams_of("web:alice") == CAP and feed.open_streams == CAP + 1
    assert not bobs.content.at_eof() and feed.streams_of("web:bob") == 1  # one user's flood ends nobody else's

    # the replaced page's browser reconnects with the id it was given: a 204 stops it, and ends nothing
    again = await web.get("/live", headers={"Last-Event-ID": "replaced"})
    assert again.status == 204
    assert feed.streams_of("web:alice") == CAP and not any(s.content.at_eof() for s in streams)
    for resp in (*streams, bobs):
        resp.close()


async def test_a_stream_whose_page_went_away_frees_its_slot(served: TestClient[Any, Any]) -> None:
    feed = _feed(served)
    feed.poll = 0.02  # the heartbeat stays at 15 s: the slot must not wait for it
    await sign_in(served)
    streams = [await _open(served) for _ in range(CAP)]
    streams.pop(1).close()  # a page the user left
    await _until(lambda: feed.streams_of("web:alice") == CAP - 1)  # before: only at the next write
    streams.append(await _open(served))  # within the cap again: nobody is replaced
    assert feed.streams_of("web:alice") == CAP and not any(s.content.at_eof() for s in streams)
    for resp in streams:
        resp.close()


async def test_a_stream_whose_session_ended_frees_its_slot(web: Any, aiohttp_client: Any) -> None:  # noqa: F811
    feed = _feed(web)
    feed.heartbeat = 0.05
    await sign_in(web)
    first = await _open(web)  # alice in one browser
    second = await aiohttp_client(web.server)  # and in another
    await sign_in(second)
    streams = [await _open(second) for _ in range(CAP - 1)]
    await web.post("/logout", data={"csrf": csrf_of(await (await web.get("/")).text())})
    assert "replaced" not in await _rest(first)  # ended with its session
    await _until(lambda: feed.streams_of("web:alice") == CAP - 1)
    streams.append(await _open(second))
    assert feed.streams_of("web:alice") == CAP and not any(s.content.at_eof() for s in streams)
    for resp in streams:
        resp.close()
