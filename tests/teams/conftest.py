"""Teams fixtures: the fake Bot Framework (issuer, token endpoint, Bot Connector) on loopback
and the real app wired to it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from adapters.teams.channel import TeamsChannel
from adapters.teams.parse import make_ref
from gateway.config import Settings
from gateway.core import rounds
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.testing import FakeClock
from tests.conftest import AUTH, suspend_body
from tests.fakes.teams_api import CONVERSATION, FakeTeams, invoke

PATH = "/webhooks/teams"
ALICE = "aaaaaaaa-0000-4000-8000-00000000a11c"
BOB = "bbbbbbbb-0000-4000-8000-0000000000b0"
MALLORY = "eeeeeeee-0000-4000-8000-000000000bad"  # in the tenant, not an approver
MRIS = {ALICE: "29:1alice", BOB: "29:1bob", MALLORY: "29:1mallory"}


@pytest.fixture
async def fake_teams(clock: FakeClock) -> AsyncIterator[FakeTeams]:
    fake = FakeTeams(lambda: clock.now().timestamp())
    fake.members = {ALICE: MRIS[ALICE], BOB: MRIS[BOB]}
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
def teams_settings(settings_factory: Callable[..., Settings], fake_teams: FakeTeams) -> Settings:
    return settings_factory(
        teams=fake_teams.section(approvers=[ALICE, BOB]),
        policies={
            "two": {"quorum": 2},
            "strict": {"timeout": "1h", "require_reason": True},
            "remind": {"timeout": "1h", "remind": ["10m"]},
            "stretch": {"timeout": "1h", "extend": ["1h"], "max_extensions": 1},
            "roomy": {"timeout": "1h", "extend": ["1h"], "max_extensions": 3},  # a second extension is allowed
            "trusted": {"grants": ["1h", "run"]},
        },
        web={"approvers": ["alice"]},
    )


@dataclass
class TeamsEnv:
    client: TestClient[Any, Any]
    rt: Runtime
    fake: FakeTeams
    clock: FakeClock

    @property
    def channel(self) -> TeamsChannel:
        ch = self.rt.channels["teams"]
        assert isinstance(ch, TeamsChannel)
        return ch

    async def suspend(self, **over: Any) -> str:
        body = suspend_body(channels=[f"teams:{CONVERSATION}", "web"], **over)
        resp = await self.client.post("/v1/suspend", json=body, headers=AUTH)
        assert resp.status == 201, await resp.text()
        return str((await resp.json())["id"])

    async def posted(self, approval_id: str) -> str:
        """Deliver the card; return its activity id."""
        await self.rt.outbox.drain()
        card = await self.rt.store.get_card(approval_id, f"teams:{CONVERSATION}")
        assert card is not None and card.ref is not None, card
        return card.ref.rpartition("|")[2]

    def card(self, activity_id: str) -> dict[str, Any]:
        """The shared card, as Teams shows it now."""
        return self.fake.cards()[activity_id]

    async def data(self, approval_id: str, **more: Any) -> dict[str, Any]:
        """What a card's action carries: the signed ref and the round tag of the args shown."""
        approval = await self.rt.store.get_approval(approval_id)
        assert approval is not None
        return {"ref": make_ref(self.rt.signer, approval_id), "seen": rounds.tag(self.rt.signer, approval)} | more

    async def send(self, activity: dict[str, Any], token: str | None = None) -> tuple[int, dict[str, Any]]:
        if token is None:
            token = self.fake.issuer.token(activity["serviceUrl"])
        resp = await self.client.post(PATH, json=activity, headers={"Authorization": f"Bearer {token}"})
        text = await resp.text()
        return resp.status, (await resp.json()) if text else {}

    async def press(
        self, user: str, verb: str, approval_id: str, card_id: str = "", **data: Any
    ) -> tuple[int, dict[str, Any]]:
        activity = invoke(
            verb=verb,
            data=await self.data(approval_id, **data),
            service_url=self.fake.service_url,
            user=user,
            mri=MRIS.get(user, "29:1x"),
            card_id=card_id,
        )
        return await self.send(activity)

    async def event_kinds(self, approval_id: str) -> list[str]:
        return [e.kind for e in await self.rt.store.list_events(approval_id)]


@pytest.fixture
async def teams(
    aiohttp_client: Callable[..., Any], teams_settings: Settings, clock: FakeClock, fake_teams: FakeTeams
) -> AsyncIterator[TeamsEnv]:
    rt = Runtime(teams_settings, clock=clock, owner="test")
    app = create_app(teams_settings, runtime=rt, background=False)
    client = await aiohttp_client(app)
    yield TeamsEnv(client, rt, fake_teams, clock)
