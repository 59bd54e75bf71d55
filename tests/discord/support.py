"""Discord fixtures: the fake Discord API on loopback and the real app wired to it (shared by
tests/discord/ and tests/security/test_discord.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from adapters.discord.channel import DiscordChannel
from adapters.discord.parse import make_ref
from gateway.config import Settings
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.testing import FakeClock
from tests.conftest import AUTH, suspend_body
from tests.fakes.discord_api import APPLICATION_ID, BOT_TOKEN, GUILD_ID, PUBLIC_KEY, Delivered, FakeDiscord

PATH = "/webhooks/discord"
CARDS = "1300000000000000777"
ONCALL = "1300000000000000888"  # a second channel with cards
ALICE, BOB, MALLORY = "1110000000000000001", "1110000000000000002", "1110000000000000666"


@pytest.fixture
async def fake_discord() -> AsyncIterator[FakeDiscord]:
    fake = FakeDiscord()
    await fake.start()
    yield fake
    await fake.stop()


def discord_section(fake: FakeDiscord, **over: Any) -> dict[str, Any]:
    return {
        "bot_token": BOT_TOKEN,
        "public_key": PUBLIC_KEY,
        "application_id": APPLICATION_ID,
        "guild_ids": [GUILD_ID],
        "base_url": fake.base_url,
        "approvers": [ALICE, BOB],
        "channels": [CARDS, ONCALL],
        **over,
    }


@pytest.fixture
def discord_settings(settings_factory: Callable[..., Settings], fake_discord: FakeDiscord) -> Settings:
    return settings_factory(
        discord=discord_section(fake_discord),
        policies={
            "two": {"quorum": 2},
            "remind": {"timeout": "1h", "remind": ["10m"]},
            "strict": {"timeout": "1h", "require_reason": True},
            "stretch": {"timeout": "1h", "extend": ["1h"], "max_extensions": 1},
            "roomy": {"timeout": "1h", "extend": ["1h"], "max_extensions": 3},  # a second extension is allowed
            "trusted": {"grants": ["1h", "run"]},
        },
        web={"approvers": ["alice"]},
    )


@dataclass
class DiscordEnv:
    client: TestClient[Any, Any]
    rt: Runtime
    fake: FakeDiscord
    clock: FakeClock

    @property
    def channel(self) -> DiscordChannel:
        ch = self.rt.channels["discord"]
        assert isinstance(ch, DiscordChannel)
        return ch

    async def suspend(self, **over: Any) -> str:
        body = suspend_body(**{"channels": [f"discord:{CARDS}", "web"], **over})
        resp = await self.client.post("/v1/suspend", json=body, headers=AUTH)
        assert resp.status == 201, await resp.text()
        return str((await resp.json())["id"])

    async def posted(self, approval_id: str) -> str:
        """Deliver the card; return its message id."""
        await self.rt.outbox.drain()
        card = await self.rt.store.get_card(approval_id, f"discord:{CARDS}")
        assert card is not None and card.ref is not None, card
        return card.ref.split(":", 1)[1]

    def ref(self, approval_id: str) -> str:
        return make_ref(self.rt.signer, approval_id)

    def message(self, message_id: str) -> dict[str, Any]:
        return self.fake.messages[(CARDS, message_id)]

    async def send(self, payload: dict[str, Any], **sign: Any) -> Delivered:
        done = await self.fake.deliver(self.client.post, PATH, payload, **sign)
        await self.channel.settle()  # the follow-ups after the answer
        return done

    async def press(
        self, user: str, custom_id: str, message: str, *, guild: str | None = GUILD_ID, **sign: Any
    ) -> Delivered:
        payload = self.fake.interaction(3, user, custom_id=custom_id, channel=CARDS, message=message, guild=guild)
        return await self.send(payload, **sign)

    async def submit(self, user: str, custom_id: str, message: str, values: dict[str, str]) -> Delivered:
        payload = self.fake.interaction(5, user, custom_id=custom_id, channel=CARDS, message=message, values=values)
        return await self.send(payload)

    def button(self, message_id: str, label: str) -> str:
        """The custom_id of the card's button with this label (the card as Discord holds it)."""
        for row in self.message(message_id).get("components", []):
            for b in row["components"]:
                if b["label"] == label:
                    return str(b["custom_id"])
        raise AssertionError(f"no button {label!r} on the card")


@pytest.fixture
async def discord(
    aiohttp_client: Callable[..., Any], discord_settings: Settings, clock: FakeClock, fake_discord: FakeDiscord
) -> AsyncIterator[DiscordEnv]:
    fake_discord.clock = lambda: clock.now().timestamp()
    rt = Runtime(discord_settings, clock=clock, owner="test")
    app = create_app(discord_settings, runtime=rt, background=False)
    client = await aiohttp_client(app)
    yield DiscordEnv(client, rt, fake_discord, clock)
