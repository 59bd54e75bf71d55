"""An interaction's id is recorded with the decision it makes, in the decision's transaction.

A press cut short between where the id used to be recorded (before deciding) and the decision's
commit left nothing behind: the same interaction again is a first delivery, and decides. Once
committed, the same interaction again is a replay: refused, and it votes nothing twice.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from gateway.core.models import Status
from tests.discord.support import ALICE, CARDS, DiscordEnv
from tests.helpers import CommitDiesOnce, table_counts


@pytest.fixture
def db_url(store_url: str) -> str:
    return store_url  # SQLite and PostgreSQL: the marks commit in the backend's own transaction


async def _payload(discord: DiscordEnv, how: str, aid: str, mid: str) -> dict[str, Any]:
    if how == "button":
        return discord.fake.interaction(3, ALICE, custom_id=discord.button(mid, "Reject"), channel=CARDS, message=mid)
    values = {"reason": "wrong customer"}  # the reject-with-reason modal's submit decides too
    custom_id = f"hitl:reason:{discord.ref(aid)}"
    return discord.fake.interaction(5, ALICE, custom_id=custom_id, channel=CARDS, message=mid, values=values)


@pytest.mark.parametrize("how", ["button", "modal"])
async def test_a_discord_interaction_cut_short_before_its_commit_decides_when_sent_again(
    discord: DiscordEnv, how: str
) -> None:
    aid = await discord.suspend()
    mid = await discord.posted(aid)
    payload = await _payload(discord, how, aid, mid)
    dies = CommitDiesOnce(discord.rt)

    first = await discord.send(payload)
    assert dies.died and first.status == 200  # deferred: the failure is told as a follow-up
    assert (await discord.rt.service.get(aid)).status is Status.WAITING
    assert discord.fake.replies(ALICE) == ["Something went wrong; nothing changed. Please press again."]

    again = await discord.send(payload)  # the same interaction id
    assert (again.status, again.body) == (200, {"type": 6})
    approval = await discord.rt.service.get(aid)
    assert approval.status is Status.REJECTED and len(approval.votes) == 1
    assert approval.decision is not None and approval.decision.decided_by == f"discord:{ALICE}"
    kinds = [e.kind for e in await discord.rt.store.list_events(aid)]
    assert kinds.count("rejected") == 1

    # committed now: the same interaction once more is a replay, refused, and changes nothing
    before, calls = await table_counts(discord.rt), len(discord.fake.calls)
    replay = await discord.send(payload)
    assert replay.status == 401
    assert await table_counts(discord.rt) == before and len(discord.fake.calls) == calls


async def test_a_replayed_discord_vote_counts_once_toward_the_quorum(discord: DiscordEnv) -> None:
    aid = await discord.suspend(policy="two")
    mid = await discord.posted(aid)
    payload = discord.fake.interaction(3, ALICE, custom_id=discord.button(mid, "Approve"), channel=CARDS, message=mid)
    assert (await discord.send(payload)).status == 200
    before = await table_counts(discord.rt)
    assert (await discord.send(payload)).status == 401  # the same interaction: its mark committed with the vote
    assert await table_counts(discord.rt) == before
    approval = await discord.rt.service.get(aid)
    assert approval.status is Status.WAITING and len(approval.votes) == 1
    kinds = [e.kind for e in await discord.rt.store.list_events(aid)]
    assert kinds.count("vote") == 1 and "duplicate_vote" not in kinds


async def test_a_discord_extend_cut_short_before_its_commit_extends_once_when_sent_again(discord: DiscordEnv) -> None:
    aid = await discord.suspend(policy="roomy")
    mid = await discord.posted(aid)
    before = await discord.rt.service.get(aid)
    assert before.deadline is not None
    payload = discord.fake.interaction(3, ALICE, custom_id=discord.button(mid, "+1h"), channel=CARDS, message=mid)
    dies = CommitDiesOnce(discord.rt)

    first = await discord.send(payload)
    assert dies.died and first.status == 200  # deferred: the failure is told as a follow-up
    assert (await discord.rt.service.get(aid)).extensions == 0

    again = await discord.send(payload)  # the same interaction id: nothing was left behind
    assert (again.status, again.body) == (200, {"type": 6})
    after = await discord.rt.service.get(aid)
    assert after.extensions == 1 and after.deadline == before.deadline + timedelta(hours=1)
    assert discord.fake.replies(ALICE)[-1].startswith("Extended: the new deadline is")

    # committed now: the same interaction once more is a replay, refused, and extends nothing (the policy allows 3)
    counts = await table_counts(discord.rt)
    assert (await discord.send(payload)).status == 401
    assert await table_counts(discord.rt) == counts
    assert (await discord.rt.service.get(aid)).extensions == 1
