"""A gateway with `[webpush]` on, a local push service (tests/fakes/push_service.py), web users
who sign in, and helpers to subscribe a browser and follow a push's links."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest
from aiohttp.test_utils import TestClient

from gateway.config import Settings
from gateway.core.models import Approval
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.settings.webpush import generate_keys
from gateway.testing import FakeClock
from tests.fakes.push_service import Browser, FakePushService
from tests.web.conftest import HASH, csrf_of, sign_in

PUBLIC, PRIVATE = generate_keys()
SUBJECT = "mailto:ops@example.com"
WEB = {
    "approvers": ["alice", "bob"],
    "viewers": ["victor"],
    "passwords": {"alice": HASH, "bob": HASH, "victor": HASH},
}


def push_settings(settings_factory: Callable[..., Settings], **over: Any) -> Settings:
    return settings_factory(
        web=WEB,
        webpush={"public_key": PUBLIC, "private_key": PRIVATE, "subject": SUBJECT} | over,
        policies={
            "strict": {"timeout": "1h", "require_reason": True},
            "pair": {"timeout": "1h", "quorum": 2},
            "nudge": {"timeout": "1h", "remind": ["10m"]},
        },
    )


@dataclass
class Rig:
    rt: Runtime
    service: FakePushService
    clock: FakeClock
    new_client: Callable[[], Any]

    async def client(self, name: str | None = None) -> TestClient[Any, Any]:
        """A browser of its own (its own cookies), signed in as `name` if given."""
        client: TestClient[Any, Any] = await self.new_client()
        if name is not None:
            resp = await sign_in(client, name)
            assert resp.status == 303, await resp.text()
        return client

    async def subscribe(self, client: TestClient[Any, Any], browser: Browser | None = None) -> Any:
        """POST this browser's subscription from the inbox page, with the page's CSRF token."""
        browser = browser or self.service.browser(PUBLIC)
        csrf = csrf_of(await (await client.get("/")).text())
        resp = await client.post("/push/subscribe", data={"csrf": csrf, **browser.form()})
        return browser, resp

    async def suspend(self, title: str = "Pay ACME 4200 EUR", **kw: Any) -> Approval:
        approval, _ = await self.rt.service.suspend(
            SuspendRequest(kw.pop("run_id", "run-1"), kw.pop("step", "pay"), title, **kw)
        )
        return approval


async def build(
    aiohttp_client: Callable[..., Any], aiohttp_server: Callable[..., Any], settings: Settings, clock: FakeClock
) -> Rig:
    service = FakePushService(clock.now)
    server = await aiohttp_server(service.app)
    service.origin = str(server.make_url("/")).rstrip("/")
    rt = Runtime(settings, clock=clock, owner="test")
    app = create_app(settings, runtime=rt, background=False)
    first: TestClient[Any, Any] = await aiohttp_client(app)

    async def new_client() -> TestClient[Any, Any]:
        client: TestClient[Any, Any] = await aiohttp_client(first.server)
        return client

    return Rig(rt, service, clock, new_client)


def path(url: str) -> str:
    """A link's path: the test client talks to the app, not to the public URL."""
    return urlsplit(url).path


def action(browser: Browser, name: str, index: int = -1) -> str:
    """The link of a push's action ('approve' or 'reject'), from the decrypted payload."""
    (url,) = [a["url"] for a in browser.received[index]["actions"] if a["action"] == name]
    return path(url)


async def follow(client: TestClient[Any, Any], link: str, **form: str) -> tuple[int, str]:
    """GET the link's page, then POST its form (with its CSRF token): the status and page of the POST."""
    page = await client.get(link)
    assert page.status == 200, await page.text()
    resp = await client.post(link, data={"csrf": csrf_of(await page.text()), **form})
    return resp.status, await resp.text()


@pytest.fixture  # re-exported by tests/webpush/conftest.py and tests/security/conftest.py
async def rig(
    aiohttp_client: Callable[..., Any],
    aiohttp_server: Callable[..., Any],
    settings_factory: Callable[..., Settings],
    clock: FakeClock,
) -> Rig:
    return await build(aiohttp_client, aiohttp_server, push_settings(settings_factory), clock)
