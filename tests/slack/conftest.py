"""Slack fixtures: the fake Slack Web API on loopback and the real app wired to it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient

from adapters.slack.channel import SlackChannel
from adapters.slack.parse import make_ref
from gateway.config import Settings
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.testing import FakeClock
from tests.conftest import AUTH, suspend_body
from tests.fakes.slack_api import BOT_TOKEN, SIGNING_SECRET, FakeSlack, block_actions, signed

PATH = "/webhooks/slack/interactions"
CARDS = "C0CARDS"
APPROVERS = ["UALICE", "UBOB"]


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    fake = FakeSlack()
    await fake.start()
    yield fake
    await fake.stop()


def slack_section(fake: FakeSlack, **over: Any) -> dict[str, Any]:
    return {
        "bot_token": BOT_TOKEN,
        "signing_secret": SIGNING_SECRET,
        "base_url": fake.base_url,
        "approvers": APPROVERS,
        "channels": [CARDS],
        **over,
    }


@pytest.fixture
def slack_settings(settings_factory: Callable[..., Settings], fake_slack: FakeSlack) -> Settings:
    return settings_factory(
        slack=slack_section(fake_slack),
        policies={
            "two": {"quorum": 2},
            "remind": {"timeout": "1h", "remind": ["10m"]},
            "stretch": {"timeout": "1h", "extend": ["1h"], "max_extensions": 1},
            "strict": {"timeout": "1h", "require_reason": True},
        },
        web={"approvers": ["alice"]},
    )


@dataclass
class SlackEnv:
    client: TestClient[Any, Any]
    rt: Runtime
    fake: FakeSlack
    clock: FakeClock

    @property
    def channel(self) -> SlackChannel:
        ch = self.rt.channels["slack"]
        assert isinstance(ch, SlackChannel)
        return ch

    async def suspend(self, **over: Any) -> str:
        body = suspend_body(channels=[f"slack:{CARDS}", "web"], **over)
        resp = await self.client.post("/v1/suspend", json=body, headers=AUTH)
        assert resp.status == 201, await resp.text()
        return str((await resp.json())["id"])

    async def posted(self, approval_id: str) -> str:
        """Deliver the card; return its Slack ts."""
        await self.rt.outbox.drain()
        card = await self.rt.store.get_card(approval_id, f"slack:{CARDS}")
        assert card is not None and card.ref is not None, card
        return card.ref.split(":", 1)[1]

    def ref(self, approval_id: str) -> str:
        return make_ref(self.rt.signer, approval_id)

    async def send(self, payload: dict[str, Any], *, at: float | None = None) -> ClientResponse:
        now = self.clock.now().timestamp() if at is None else at
        body, headers = signed(payload, now)
        return await self.client.post(PATH, data=body, headers=headers)

    async def press(self, user: str, verb: str, approval_id: str, *, reply_key: str | None = None) -> ClientResponse:
        ref = self.ref(approval_id)
        payload = block_actions(
            user,
            f"hitl:{verb}:{ref}",
            ref,
            response_url=self.fake.response_url(reply_key or user),
        )
        return await self.send(payload)

    async def api(self, approval_id: str) -> dict[str, Any]:
        resp = await self.client.get(f"/v1/approvals/{approval_id}", headers=AUTH)
        assert resp.status == 200
        data: dict[str, Any] = await resp.json()
        return data

    async def event_kinds(self, approval_id: str) -> list[str]:
        return [e.kind for e in await self.rt.store.list_events(approval_id)]


@pytest.fixture
async def slack(
    aiohttp_client: Callable[..., Any], slack_settings: Settings, clock: FakeClock, fake_slack: FakeSlack
) -> AsyncIterator[SlackEnv]:
    fake_slack.clock = lambda: clock.now().timestamp()
    rt = Runtime(slack_settings, clock=clock, owner="test")
    app = create_app(slack_settings, runtime=rt, background=False)
    client = await aiohttp_client(app)
    yield SlackEnv(client, rt, fake_slack, clock)
