"""The other buttons of a Discord card: "+1h" (extend), "Approve · 1h" (a standing grant), and a
card where nobody may decide (no buttons)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from gateway.config import Settings
from gateway.core.models import Status
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.testing import FakeClock
from tests.discord.support import ALICE, DiscordEnv, discord_section
from tests.fakes.discord_api import FakeDiscord


async def test_extend_moves_the_deadline_once(discord: DiscordEnv) -> None:
    aid = await discord.suspend(policy="stretch")
    mid = await discord.posted(aid)
    before = await discord.rt.store.get_approval(aid)
    assert before is not None and before.deadline is not None
    await discord.press(ALICE, discord.button(mid, "+1h"), mid)
    after = await discord.rt.store.get_approval(aid)
    assert after is not None and after.deadline is not None
    assert (after.deadline - before.deadline).total_seconds() == 3600 and after.status is Status.WAITING
    assert any(r.startswith("Extended") for r in discord.fake.replies(ALICE))
    assert "extended 1×" in json.dumps(discord.message(mid), ensure_ascii=False)
    assert discord.fake.failures == []


async def test_approve_for_1h_makes_a_grant(discord: DiscordEnv) -> None:
    aid = await discord.suspend(policy="trusted")
    mid = await discord.posted(aid)
    await discord.press(ALICE, discord.button(mid, "Approve · 1h"), mid)
    approval = await discord.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.APPROVED
    [grant] = await discord.rt.store.list_grants(discord.clock.now())
    assert (grant.granted_by, grant.duration) == (f"discord:{ALICE}", "1h")


@pytest.fixture
async def nobody(
    aiohttp_client: Callable[..., Any], settings_factory: Callable[..., Settings], clock: FakeClock
) -> AsyncIterator[DiscordEnv]:
    fake = FakeDiscord(clock=lambda: clock.now().timestamp())
    await fake.start()
    settings = settings_factory(discord=discord_section(fake, approvers=[]), web={"approvers": ["alice"]})
    rt = Runtime(settings, clock=clock, owner="test")
    client = await aiohttp_client(create_app(settings, runtime=rt, background=False))
    yield DiscordEnv(client, rt, fake, clock)
    await fake.stop()


async def test_where_nobody_may_decide_the_card_has_no_buttons(nobody: DiscordEnv) -> None:
    aid = await nobody.suspend()
    mid = await nobody.posted(aid)
    card = nobody.message(mid)
    assert card["components"] == []
    assert any(f["name"] == "Note" for f in card["embeds"][0]["fields"])
