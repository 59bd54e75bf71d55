"""Web sessions end on the server: logout, and removing a user from the config.

Issue 13's finding "logout does not revoke the session cookie": a copied cookie kept working after
its user signed out.
"""

from __future__ import annotations

import re

import pytest

from tests.security.conftest import HASH, Launch, browser, sign_in

pytestmark = pytest.mark.subprocess  # every test here starts a process


async def _inbox_status(base: str, cookie: str) -> int:
    """GET / with only this session cookie (a fresh client: the attacker's copy)."""
    async with browser() as http:
        http.cookie_jar.update_cookies({"hitl_session": cookie})
        async with http.get(f"{base}/", allow_redirects=False) as resp:
            return resp.status


async def test_a_cookie_is_dead_after_logout(launch: Launch) -> None:
    gw = launch()
    async with browser() as elsewhere:
        other = await sign_in(elsewhere, gw.url)  # the same user, in another browser
    async with browser() as http:
        cookie = await sign_in(http, gw.url)
        assert await _inbox_status(gw.url, cookie) == 200
        page = await (await http.get(f"{gw.url}/")).text()
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf
        async with http.post(f"{gw.url}/logout", data={"csrf": csrf.group(1)}, allow_redirects=False) as resp:
            assert resp.status == 303
    assert await _inbox_status(gw.url, cookie) == 303  # replayed after logout: back to /login
    assert await _inbox_status(gw.url, other) == 200  # logout ends that session, not every one


async def test_a_user_removed_from_the_config_loses_every_session(launch: Launch) -> None:
    both = f'approvers = ["alice", "bob"]\npasswords = {{ alice = "{HASH}", bob = "{HASH}" }}'
    gw = launch(name="web", web=both)
    async with browser() as http:
        cookie = await sign_in(http, gw.url, "bob")
    assert await _inbox_status(gw.url, cookie) == 200
    gw.stop()
    alone = f'approvers = ["alice"]\npasswords = {{ alice = "{HASH}" }}'
    gw = launch(name="web", port=gw.port, web=alone)  # the same database, bob removed
    assert await _inbox_status(gw.url, cookie) == 303
    gw.stop()
    gw = launch(name="web", port=gw.port, web=both)  # bob back: a new sign-in, not the old cookie
    assert await _inbox_status(gw.url, cookie) == 303
