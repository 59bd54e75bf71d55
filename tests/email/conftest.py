"""E-mail fixtures: a real SMTP server (aiosmtpd) in the test's loop, and the app sending to it."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient

from gateway.config import Settings
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.testing import FakeClock
from tests.conftest import AUTH, suspend_body
from tests.fakes.smtp import Inbox

ALICE, BOB, MALLORY = "alice@example.org", "bob@example.org", "mallory@example.org"
SENDER = "gateway@hitl.example.org"
_CSRF = re.compile(r"name='csrf' value='([^']+)'")


@pytest.fixture
async def inbox() -> AsyncIterator[Inbox]:
    box = await Inbox().start()
    yield box
    await box.stop()


def email_section(inbox: Inbox, **over: Any) -> dict[str, Any]:
    return {
        "host": "127.0.0.1",
        "port": inbox.port,
        "from": SENDER,
        "approvers": [ALICE, BOB],
        "recipients": [MALLORY],  # mailed for information only
        "starttls": False,
        "timeout": "5s",
        **over,
    }


@dataclass
class Mail:
    client: TestClient[Any, Any]
    rt: Runtime
    inbox: Inbox
    clock: FakeClock

    async def suspend(self, **over: Any) -> str:
        body = suspend_body(**{"channels": [f"email:{ALICE}", "web"], **over})
        resp = await self.client.post("/v1/suspend", json=body, headers=AUTH)
        assert resp.status == 201, await resp.text()
        return str((await resp.json())["id"])

    async def get(self, url: str) -> ClientResponse:
        return await self.client.get(urlsplit(url).path)

    async def confirm(self, url: str, **form: str) -> ClientResponse:
        """Open the link's page like a browser, then submit its form."""
        page = await self.get(url)
        assert page.status == 200, await page.text()
        match = _CSRF.search(await page.text())
        assert match is not None, "no confirmation form on the page"
        return await self.client.post(urlsplit(url).path, data={"csrf": match.group(1), **form})


@pytest.fixture
def mail_settings(settings_factory: Callable[..., Settings], inbox: Inbox) -> Settings:
    return settings_factory(
        email=email_section(inbox),
        web={"approvers": ["carol"]},
        policies={
            "pair": {"timeout": "1h", "quorum": 2},
            "nudge": {"timeout": "30m", "remind": ["10m"]},
            "strict": {"timeout": "1h", "require_reason": True},
            "stretch": {"timeout": "1h", "extend": ["1h"], "max_extensions": 1},
            "roomy": {"timeout": "1h", "extend": ["1h"], "max_extensions": 3},  # a second extension is allowed
        },
    )


@pytest.fixture
async def mail(
    aiohttp_client: Callable[..., Any], mail_settings: Settings, inbox: Inbox, clock: FakeClock
) -> AsyncIterator[Mail]:
    rt = Runtime(mail_settings, clock=clock, owner="test")
    client = await aiohttp_client(create_app(mail_settings, runtime=rt, background=False))
    yield Mail(client, rt, inbox, clock)
