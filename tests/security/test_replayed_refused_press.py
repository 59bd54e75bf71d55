"""A press refused when it came (its presser could not decide then) records its delivery id, and
a replay of it is refused for good: it decides nothing, even once the presser may decide (a
delegation made since). The presser was told "nothing changed"; a replay within the platform's
window, by anyone who captured the request, must not change that behind their back."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gateway.core.clock import iso
from gateway.core.models import Status
from tests.conftest import OPERATOR
from tests.discord.support import ALICE, CARDS, MALLORY, DiscordEnv, discord, discord_settings, fake_discord
from tests.fakes.teams_api import invoke
from tests.helpers import table_counts
from tests.teams.conftest import ALICE as ALICE_TEAMS
from tests.teams.conftest import MALLORY as MALLORY_TEAMS
from tests.teams.conftest import MRIS, TeamsEnv, fake_teams, teams, teams_settings

__all__ = ["discord", "discord_settings", "fake_discord", "fake_teams", "teams", "teams_settings"]  # the fixtures


@pytest.fixture
def db_url(store_url: str) -> str:
    return store_url  # SQLite and PostgreSQL: the refusal mark is the store's


async def test_a_replayed_denied_discord_press_decides_nothing_after_a_delegation(discord: DiscordEnv) -> None:
    aid = await discord.suspend()
    mid = await discord.posted(aid)
    custom_id = discord.button(mid, "Approve")
    payload = discord.fake.interaction(3, MALLORY, custom_id=custom_id, channel=CARDS, message=mid)
    assert (await discord.send(payload)).status == 200  # answered: not authorised, nothing changed
    assert (await discord.rt.service.get(aid)).status is Status.WAITING

    until = iso(discord.clock.now() + timedelta(hours=8))
    body = {"delegator": f"discord:{ALICE}", "delegate": f"discord:{MALLORY}", "until": until}
    resp = await discord.client.post("/v1/delegations", json=body, headers=OPERATOR)
    assert resp.status == 201, await resp.text()

    before = await table_counts(discord.rt)
    replay = await discord.send(payload)  # the same interaction, within Discord's window
    assert replay.status == 401
    approval = await discord.rt.service.get(aid)
    assert approval.status is Status.WAITING and not approval.votes
    assert await table_counts(discord.rt) == before


async def test_a_replayed_denied_teams_activity_decides_nothing_after_a_delegation(teams: TeamsEnv) -> None:
    aid = await teams.suspend()
    card_id = await teams.posted(aid)
    data = await teams.data(aid)
    mri = MRIS[MALLORY_TEAMS]
    activity = invoke(
        verb="approve", data=data, service_url=teams.fake.service_url, user=MALLORY_TEAMS, mri=mri, card_id=card_id
    )
    status, answer = await teams.send(activity)
    assert status == 200 and "not authorised" in str(answer)

    until = iso(teams.clock.now() + timedelta(hours=8))
    body = {"delegator": f"teams:{ALICE_TEAMS}", "delegate": f"teams:{MALLORY_TEAMS}", "until": until}
    resp = await teams.client.post("/v1/delegations", json=body, headers=OPERATOR)
    assert resp.status == 201, await resp.text()

    before = await table_counts(teams.rt)
    status, answer = await teams.send(activity)  # the same activity id
    assert status == 200 and "already received" in str(answer)
    approval = await teams.rt.service.get(aid)
    assert approval.status is Status.WAITING and not approval.votes
    assert await table_counts(teams.rt) == before
