"""An activity's id is recorded with the decision it makes, in the decision's transaction.

An invoke cut short between where the id used to be recorded (before deciding) and the
decision's commit left nothing behind: the Bot Framework's redelivery of the same activity is a
first delivery, decides, and gets the card as its answer. Once committed, the same activity
again is answered as a replay and votes nothing twice.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from gateway.core.models import Status
from tests.fakes.teams_api import invoke
from tests.helpers import CommitDiesOnce, table_counts
from tests.teams.conftest import ALICE, BOB, MRIS, TeamsEnv


@pytest.fixture
def db_url(store_url: str) -> str:
    return store_url  # SQLite and PostgreSQL: the marks commit in the backend's own transaction


@pytest.mark.parametrize(("verb", "kind"), [("approve", "approved"), ("reject", "rejected")])
async def test_a_teams_activity_cut_short_before_its_commit_decides_when_sent_again(
    teams: TeamsEnv, verb: str, kind: str
) -> None:
    aid = await teams.suspend()
    card_id = await teams.posted(aid)
    data = await teams.data(aid, **({"reason": "wrong customer"} if verb == "reject" else {}))
    activity = invoke(
        verb=verb, data=data, service_url=teams.fake.service_url, user=ALICE, mri=MRIS[ALICE], card_id=card_id
    )
    dies = CommitDiesOnce(teams.rt)

    status, _ = await teams.send(activity)
    assert dies.died and status == 500  # no answer: the Bot Framework sends the activity again
    assert (await teams.rt.service.get(aid)).status is Status.WAITING

    status, answer = await teams.send(activity)  # the same activity id
    assert status == 200 and "already received" not in str(answer)
    assert f"**{kind.capitalize()}**" in str(answer)  # the presser's card, as committed
    approval = await teams.rt.service.get(aid)
    assert approval.status.value == kind and len(approval.votes) == 1
    assert approval.decision is not None and approval.decision.decided_by == f"teams:{ALICE}"
    assert (await teams.event_kinds(aid)).count(kind) == 1

    # committed now: the same activity once more is a replay, and changes nothing
    before = await table_counts(teams.rt)
    status, answer = await teams.send(activity)
    assert status == 200 and "already received" in answer["value"]
    assert await table_counts(teams.rt) == before


async def test_a_replayed_teams_vote_counts_once_toward_the_quorum(teams: TeamsEnv) -> None:
    aid = await teams.suspend(policy="two")
    card_id = await teams.posted(aid)
    activity = invoke(
        verb="approve",
        data=await teams.data(aid),
        service_url=teams.fake.service_url,
        user=ALICE,
        mri=MRIS[ALICE],
        card_id=card_id,
    )
    assert (await teams.send(activity))[0] == 200
    before = await table_counts(teams.rt)
    status, answer = await teams.send(activity)  # its mark committed with the vote
    assert status == 200 and "already received" in answer["value"]
    assert await table_counts(teams.rt) == before
    approval = await teams.rt.service.get(aid)
    assert approval.status is Status.WAITING and len(approval.votes) == 1
    kinds = await teams.event_kinds(aid)
    assert kinds.count("vote") == 1 and "duplicate_vote" not in kinds


async def test_a_teams_extend_cut_short_before_its_commit_extends_once_when_sent_again(teams: TeamsEnv) -> None:
    aid = await teams.suspend(policy="roomy")
    card_id = await teams.posted(aid)
    before = await teams.rt.service.get(aid)
    assert before.deadline is not None
    activity = invoke(
        verb="extend",
        data=await teams.data(aid, by="1h"),
        service_url=teams.fake.service_url,
        user=BOB,
        mri=MRIS[BOB],
        card_id=card_id,
    )
    dies = CommitDiesOnce(teams.rt)

    status, _ = await teams.send(activity)
    assert dies.died and status == 500  # no answer: the Bot Framework sends the activity again
    assert (await teams.rt.service.get(aid)).extensions == 0

    status, answer = await teams.send(activity)  # the same activity id: nothing was left behind
    assert status == 200 and "Extended: the new deadline is" in json.dumps(answer, ensure_ascii=False)
    after = await teams.rt.service.get(aid)
    assert after.extensions == 1 and after.deadline == before.deadline + timedelta(hours=1)

    # committed now: the same activity once more is a replay, and extends nothing (the policy allows 3)
    counts = await table_counts(teams.rt)
    status, answer = await teams.send(activity)
    assert status == 200 and "already received" in answer["value"]
    assert await table_counts(teams.rt) == counts
    assert (await teams.rt.service.get(aid)).extensions == 1
