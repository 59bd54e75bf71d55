"""Signing in again in a browser ends the session it had.

Signing in as someone else (or again) on a shared browser replaced the cookie but left the
previous session alive in the store for its remaining hours: a copy of the old cookie (another
tab's, or one taken from that browser) kept working as the previous user. The session a
browser holds when it signs in again is revoked, as a logout would.
"""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from tests.web.conftest import sign_in, web, web_rt, web_settings  # noqa: F401 (fixtures)


async def _inbox_with(client: TestClient[Any, Any], cookie: str) -> int:
    client.session.cookie_jar.clear()
    client.session.cookie_jar.update_cookies({"hitl_session": cookie})
    return (await client.get("/", allow_redirects=False)).status


async def test_signing_in_again_ends_the_session_the_browser_had(web: TestClient[Any, Any]) -> None:  # noqa: F811
    alice = (await sign_in(web, "alice")).cookies["hitl_session"].value
    assert (await web.get("/", allow_redirects=False)).status == 200
    victor = await sign_in(web, "victor")  # the same browser, alice's cookie still in it
    assert victor.status == 303
    fresh = victor.cookies["hitl_session"].value
    assert await _inbox_with(web, alice) == 303
    assert await _inbox_with(web, fresh) == 200
