"""Fixtures for the web inbox: users in [web], a client on the real app, and a sign-in helper."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.config import Settings
from gateway.core.models import StepRecord, StepStatus
from gateway.http.app import create_app
from gateway.http.web.auth import hash_password
from gateway.runtime import Runtime
from gateway.store import Store
from gateway.testing import FakeClock

PASSWORD = "correct horse battery"
# A cheap scrypt cost keeps the suite fast; the cost is read from the hash itself.
HASH = hash_password(PASSWORD, n=2**10)
WEB = {"approvers": ["alice", "bob"], "viewers": ["victor"], "passwords": {"alice": HASH, "victor": HASH}}
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def csrf_of(html: str) -> str:
    found = _CSRF.search(html)
    assert found, "no CSRF field in the page"
    return found.group(1)


@pytest.fixture
def web_settings(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory(
        web=WEB,
        workers={"agent": {"command": ["true"]}},
        policies={
            "fast": {"timeout": "1m"},
            "strict": {"timeout": "1h", "require_reason": True},
            "pay": {"timeout": "1h", "extend": ["1h", "1d"], "max_extensions": 2},
        },
    )


@pytest.fixture
async def web_rt(web_settings: Settings, clock: FakeClock) -> Runtime:
    return Runtime(web_settings, clock=clock, owner="test")


@pytest.fixture
async def web(
    aiohttp_client: Callable[..., Any], web_settings: Settings, web_rt: Runtime
) -> AsyncIterator[TestClient[Any, Any]]:
    app = create_app(web_settings, runtime=web_rt, background=False)
    yield await aiohttp_client(app)


async def journal(store: Store, start: datetime, rows: Iterable[tuple[str, str, int, float]]) -> None:
    """Journal succeeded steps: (run_id, step, attempts, seconds) each, all started at `start`."""
    for run, name, attempts, secs in rows:
        end = start + timedelta(seconds=secs)
        await store.record_step(StepRecord(run, name, StepStatus.SUCCEEDED, {}, attempts, start, end), namespace="")


async def sign_in(client: TestClient[Any, Any], name: str = "alice", password: str = PASSWORD) -> Any:
    page = await client.get("/login")
    token = csrf_of(await page.text())
    return await client.post("/login", data={"csrf": token, "name": name, "password": password}, allow_redirects=False)


# The Sessions page's Sign out forms: one reference per session (tests/web/test_account_sessions.py,
# tests/security/test_session_signout.py)
SESSION_REF = re.compile(r'action="/account/sessions/([0-9a-f]+)/end"')
WEB_WITH_BOB = {**WEB, "passwords": {"alice": HASH, "bob": HASH, "victor": HASH}}  # two people with sessions


async def signed_in(new: Callable[[], Awaitable[TestClient[Any, Any]]], name: str) -> TestClient[Any, Any]:
    """Another browser (from `browsers`), signed in as `name`."""
    browser = await new()
    assert (await sign_in(browser, name)).status == 303
    return browser


async def session_refs(browser: TestClient[Any, Any]) -> tuple[list[str], str]:
    """The Sign out references on the browser's Sessions page, and its CSRF token."""
    text = await (await browser.get("/account/sessions")).text()
    return SESSION_REF.findall(text), csrf_of(text)


@asynccontextmanager
async def browsers(client: TestClient[Any, Any]) -> AsyncIterator[Callable[[], Awaitable[TestClient[Any, Any]]]]:
    """More browsers (each its own cookies) on `client`'s server: a person signed in on their
    laptop and on their phone. Only their sessions close at the end; the server is `client`'s."""
    opened: list[TestClient[Any, Any]] = []

    async def another() -> TestClient[Any, Any]:
        browser: TestClient[Any, Any] = TestClient(client.server)
        await browser.start_server()  # already serving: nothing to start
        opened.append(browser)
        return browser

    try:
        yield another
    finally:
        for browser in opened:
            await browser.session.close()
