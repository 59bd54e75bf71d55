"""The inbox's Sessions page (/account/sessions): a person's own live sessions, a Sign out for
each and a Sign out all other sessions, against the real aiohttp test server."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.config import Settings
from gateway.http.web.sessions import SESSION_COOKIE
from gateway.runtime import Runtime
from tests.web.conftest import SESSION_REF as _REF
from tests.web.conftest import WEB_WITH_BOB, browsers, csrf_of, signed_in
from tests.web.conftest import session_refs as refs


@pytest.fixture
def web_settings(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory(web=WEB_WITH_BOB)


async def inbox_status(browser: TestClient[Any, Any]) -> tuple[int, str]:
    resp = await browser.get("/", allow_redirects=False)
    return resp.status, resp.headers.get("Location", "")


async def test_the_sessions_page_lists_ones_own_sessions_and_marks_this_browser(web: Any, web_rt: Runtime) -> None:
    async with browsers(web) as new:
        laptop, phone, victor = (
            await signed_in(new, "alice"),
            await signed_in(new, "alice"),
            await signed_in(new, "victor"),
        )
        assert '<a href="/account/sessions">Sessions</a>' in await (await laptop.get("/")).text()
        page = await laptop.get("/account/sessions")
        text = await page.text()
        assert page.status == 200 and page.headers["Cache-Control"] == "no-store"
        mine, _ = await refs(laptop)
        theirs, _ = await refs(victor)
        assert len(mine) == 2 and len(theirs) == 1 and theirs[0] not in text  # only her own
        assert text.count("This browser") == 1 and "Another browser" in text
        assert "Sign out all other sessions" in text
        assert web_rt.clock.now().strftime("%Y-%m-%d %H:%M UTC") in text
        for browser in (laptop, phone, victor):  # no cookie, nor the store's name of a session
            cookie = browser.session.cookie_jar.filter_cookies(browser.make_url("/"))[SESSION_COOKIE].value
            assert cookie not in text
        for row in await web_rt.store.user_sessions("alice", web_rt.clock.now()):
            assert row.id not in text
        signed_out = await (await new()).get("/account/sessions", allow_redirects=False)
        assert signed_out.status == 303 and signed_out.headers["Location"] == "/login"


async def test_signing_out_another_session_sends_its_cookie_to_the_login_page(web: Any) -> None:
    async with browsers(web) as new:
        laptop, phone = await signed_in(new, "alice"), await signed_in(new, "alice")
        text = await (await laptop.get("/account/sessions")).text()
        other = re.search(r'Another browser.*?action="/account/sessions/([0-9a-f]+)/end"', text, re.S)
        assert other
        resp = await laptop.post(
            f"/account/sessions/{other.group(1)}/end", data={"csrf": csrf_of(text)}, allow_redirects=False
        )
        assert resp.status == 303 and resp.headers["Location"] == "/account/sessions"
        assert await inbox_status(phone) == (303, "/login")  # the lost phone is signed out
        assert await inbox_status(laptop) == (200, "")
        left, _ = await refs(laptop)
        assert len(left) == 1 and other.group(1) not in left
        again = await laptop.post(f"/account/sessions/{other.group(1)}/end", data={"csrf": csrf_of(text)})
        assert again.status == 404  # ended already: nothing to end


async def test_signing_out_all_other_sessions_keeps_this_one_and_other_peoples(web: Any) -> None:
    async with browsers(web) as new:
        laptop = await signed_in(new, "alice")
        phone, tablet, bob = await signed_in(new, "alice"), await signed_in(new, "alice"), await signed_in(new, "bob")
        _, csrf = await refs(laptop)
        resp = await laptop.post("/account/sessions/end-others", data={"csrf": csrf}, allow_redirects=False)
        assert resp.status == 303 and resp.headers["Location"] == "/account/sessions"
        assert await inbox_status(phone) == await inbox_status(tablet) == (303, "/login")
        assert await inbox_status(laptop) == await inbox_status(bob) == (200, "")
        text = await (await laptop.get("/account/sessions")).text()
        assert len(_REF.findall(text)) == 1 and "This browser" in text
        assert "Sign out all other sessions" not in text  # none left


async def test_signing_out_this_browser_from_its_own_row_is_a_sign_out(web: Any) -> None:
    async with browsers(web) as new:
        laptop, phone = await signed_in(new, "alice"), await signed_in(new, "alice")
        text = await (await laptop.get("/account/sessions")).text()
        this = re.search(r'This browser.*?action="/account/sessions/([0-9a-f]+)/end"', text, re.S)
        assert this
        resp = await laptop.post(
            f"/account/sessions/{this.group(1)}/end", data={"csrf": csrf_of(text)}, allow_redirects=False
        )
        assert resp.status == 303 and resp.headers["Location"] == "/login"
        assert await inbox_status(laptop) == (303, "/login")
        assert await inbox_status(phone) == (200, "")
