"""The Devices page revoked a lost phone's pushes, but the phone's signed-in session stayed valid:
whoever held it could still open the inbox and decide, and a person who trusts their password had
no way to end it. The Sessions page (/account/sessions) ends one's own sessions; these are its
attacks: another person's reference, a forged one, a reference used as a cookie, a missing or
forged CSRF token, and the ended session's open /live stream."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.config import Settings
from gateway.http.app import create_app
from gateway.http.web.inbox import LIVE
from gateway.http.web.sessions import SESSION_COOKIE
from gateway.http.web.subapp import WEB_APP
from gateway.runtime import Runtime
from gateway.testing import FakeClock
from tests.web.conftest import WEB_WITH_BOB, browsers, csrf_of, web, web_rt  # noqa: F401 (fixtures)
from tests.web.conftest import session_refs as _page
from tests.web.conftest import signed_in as _signed_in


@pytest.fixture
def web_settings(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory(web=WEB_WITH_BOB)


async def _alive(browser: TestClient[Any, Any]) -> bool:
    return (await browser.get("/", allow_redirects=False)).status == 200


async def test_another_persons_session_reference_is_a_404_that_ends_nothing(web: Any, web_rt: Runtime) -> None:  # noqa: F811
    async with browsers(web) as new:
        alice, bob = await _signed_in(new, "alice"), await _signed_in(new, "bob")
        (bobs,), _ = await _page(bob)
        _, csrf = await _page(alice)
        before = await web_rt.store.user_sessions("bob", web_rt.clock.now())
        for ref in (bobs, "0" * 32, bobs[:-1], "not-hex"):
            resp = await alice.post(f"/account/sessions/{ref}/end", data={"csrf": csrf})
            assert resp.status == 404 and "Nothing changed" in await resp.text()
        assert await web_rt.store.user_sessions("bob", web_rt.clock.now()) == before
        assert await _alive(bob) and await _alive(alice)
        ended = await bob.post(
            f"/account/sessions/{bobs}/end", data={"csrf": csrf_of(await (await bob.get("/")).text())}
        )
        assert ended.status == 200 and not await _alive(bob)  # the reference was a good one: his own ends it


async def test_ending_sessions_without_the_pages_csrf_token_is_refused(web: Any) -> None:  # noqa: F811
    async with browsers(web) as new:
        laptop, phone = await _signed_in(new, "alice"), await _signed_in(new, "alice")
        refs, _ = await _page(laptop)
        for data in ({}, {"csrf": "forged"}, {"csrf": csrf_of(await (await phone.get("/")).text())}):
            for path in [f"/account/sessions/{r}/end" for r in refs] + ["/account/sessions/end-others"]:
                resp = await laptop.post(path, data=data, allow_redirects=False)
                assert resp.status == 403, (path, data)
        assert await _alive(laptop) and await _alive(phone)
        assert len((await _page(laptop))[0]) == 2


async def test_a_session_reference_is_not_a_session_cookie(web: Any, web_rt: Runtime) -> None:  # noqa: F811
    async with browsers(web) as new:
        laptop = await _signed_in(new, "alice")
        (ref,), _ = await _page(laptop)
        (row,) = await web_rt.store.user_sessions("alice", web_rt.clock.now())
        for forged in (ref, row.id):  # what the page shows, and what the store keeps
            thief = await new()
            thief.session.cookie_jar.update_cookies({SESSION_COOKIE: forged})
            resp = await thief.get("/", allow_redirects=False)
            assert resp.status == 303 and resp.headers["Location"] == "/login"


async def test_a_signed_out_sessions_live_stream_closes(web: Any) -> None:  # noqa: F811
    web.app[WEB_APP][LIVE].heartbeat = 0.05
    async with browsers(web) as new:
        laptop, phone = await _signed_in(new, "alice"), await _signed_in(new, "alice")
        stream = await phone.get("/live")
        assert stream.status == 200 and (await stream.content.readline()).startswith(b"retry:")
        await asyncio.sleep(0.2)
        assert not stream.content.at_eof()  # signed in: the stream goes on
        _, csrf = await _page(laptop)
        assert (await laptop.post("/account/sessions/end-others", data={"csrf": csrf})).status == 200

        async def until_closed() -> None:
            while await stream.content.readline():
                pass

        await asyncio.wait_for(until_closed(), 5)
        assert await _alive(laptop)


async def test_a_session_signed_out_on_one_replica_is_refused_by_another(
    aiohttp_client: Callable[..., Any],
    web: Any,  # noqa: F811
    web_settings: Settings,
    clock: FakeClock,
) -> None:
    """Sessions live in the store, not in a replica's memory: the phone's requests that reach
    another replica (the same database, the same keys) are refused as soon as it is ended."""
    other = await aiohttp_client(
        create_app(web_settings, runtime=Runtime(web_settings, clock=clock, owner="b"), background=False)
    )
    async with browsers(web) as new, browsers(other) as new_there:
        laptop = await _signed_in(new, "alice")
        phone = await _signed_in(new_there, "alice")  # signed in through the other replica
        assert await _alive(phone)
        refs, csrf = await _page(laptop)
        assert len(refs) == 2  # this replica lists the other's session too
        assert (await laptop.post("/account/sessions/end-others", data={"csrf": csrf})).status == 200
        assert not await _alive(phone) and await _alive(laptop)
