"""A one-time sign-in link cannot outlive the mark that makes it one-time.

A sign-in link works once: its use is a de-duplication mark in the store, and housekeeping
prunes those marks after 48 hours (gateway.sla.housekeeping.INBOUND_KEEP). A link that lived
longer (`[web] login_link_max_age = "7d"`) signed in again after that, as often as it was
replayed. The config now refuses a lifetime over 24 hours; a link of the longest allowed
lifetime is refused on its second use even after every mark that could be pruned was.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest

from gateway.core.errors import ConfigError
from gateway.http.app import create_app
from gateway.http.web.auth import login_link
from gateway.runtime import Runtime
from gateway.sla.housekeeping import INBOUND_KEEP
from gateway.testing import FakeClock

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@pytest.mark.parametrize("lifetime", ["25h", "7d"])
def test_a_login_link_may_not_outlive_its_one_time_mark(settings_factory: Callable[..., Any], lifetime: str) -> None:
    with pytest.raises(ConfigError) as refused:
        settings_factory(web={"approvers": ["alice"], "login_link_max_age": lifetime})
    assert "web.login_link_max_age" in str(refused.value)


async def test_a_login_link_of_the_longest_lifetime_works_once(
    aiohttp_client: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock
) -> None:
    settings = settings_factory(web={"approvers": ["alice"], "login_link_max_age": "24h"})
    rt = Runtime(settings, clock=clock, owner="test")
    client = await aiohttp_client(create_app(settings, runtime=rt, background=False))
    path = urlsplit(login_link(settings, rt.signer, "alice", clock.now())).path

    async def use() -> int:
        client.session.cookie_jar.clear()
        page = await client.get(path)
        found = _CSRF.search(await page.text())
        assert found is not None
        form = {"csrf": found.group(1), "token": path.rsplit("/", 1)[1]}
        return (await client.post("/login/link", data=form, allow_redirects=False)).status

    assert await use() == 303
    clock.advance(timedelta(hours=23, minutes=59).total_seconds())
    await rt.store.prune(clock.now(), clock.now() - INBOUND_KEEP, 10_000)
    assert await use() == 410
