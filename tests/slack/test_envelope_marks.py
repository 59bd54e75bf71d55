"""A Socket Mode envelope's id is recorded with the decision it makes, in the decision's transaction.

An envelope cut short before the decision's commit is not acked, and left nothing behind (no
mark written in a transaction of its own before deciding): Slack's redelivery of the same
envelope is a first delivery, decides once, and is answered like the first. Once committed, the
same envelope again records nothing twice.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

import pytest
from slack_sdk.socket_mode.request import SocketModeRequest

from gateway.config import Settings
from gateway.core.models import Status
from gateway.testing import FakeClock
from tests.fakes.slack_api import FakeSlack, view_submission
from tests.helpers import CommitDiesOnce
from tests.slack.conftest import CARDS
from tests.slack.test_socket_mode import Gateway, socket_settings, start_gateway


@pytest.fixture
def db_url(store_url: str) -> str:
    return store_url  # SQLite and PostgreSQL: the marks commit in the backend's own transaction


@pytest.fixture
async def marks_gw(
    aiohttp_client: Callable[..., Any],
    settings_factory: Callable[..., Settings],
    clock: FakeClock,
    fake_slack: FakeSlack,
) -> AsyncIterator[Gateway]:
    yield await start_gateway(aiohttp_client, socket_settings(settings_factory, fake_slack), clock, fake_slack)


def _marks_on_their_own(gw: Gateway) -> Counter[str]:
    """How often a de-duplication mark is written in a transaction of its own."""
    calls = Counter[str]()
    store = gw.rt.store
    for name in ("remember_inbound", "remember_delivery"):
        real = getattr(store, name)

        def counted(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            calls[_name] += 1
            return _real(*args, **kwargs)

        setattr(store, name, counted)
    return calls


def _payload(gw: Gateway, how: str, aid: str) -> dict[str, Any]:
    if how == "button":
        return gw.button("UALICE", "reject", aid)
    metadata = json.dumps({"ref": gw.ref(aid), "channel": CARDS})  # the reason modal's submit decides too
    return view_submission("UALICE", metadata, "wrong account")


@pytest.mark.parametrize("how", ["button", "modal"])
async def test_a_slack_envelope_cut_short_before_its_commit_decides_when_sent_again(
    marks_gw: Gateway, how: str
) -> None:
    gw = marks_gw
    aid = await gw.suspend()
    socket = gw.channel.socket
    assert socket is not None
    envelope = SocketModeRequest("interactive", "env-cut-short", _payload(gw, how, aid))
    written = _marks_on_their_own(gw)
    dies = CommitDiesOnce(gw.rt)

    assert await socket.answer(envelope) is None  # not acked: Slack sends the envelope again
    assert dies.died and await gw.status(aid) is Status.WAITING
    assert not written  # no mark was left behind to make the redelivery a duplicate

    ack = await socket.answer(envelope)  # the same envelope id
    assert ack is not None and ack.envelope_id == "env-cut-short" and ack.payload is None
    approval = await gw.rt.service.get(aid)
    assert approval.status is Status.REJECTED and len(approval.votes) == 1
    assert approval.decision is not None and approval.decision.decided_by == "slack:UALICE"
    assert (await gw.kinds(aid)).count("rejected") == 1
    assert not written  # the mark committed with the decision

    again = await socket.answer(envelope)  # committed now: acked the same, nothing twice
    assert again is not None and again.payload is None
    kinds = await gw.kinds(aid)
    assert kinds.count("rejected") == 1 and "duplicate_vote" not in kinds
    assert len((await gw.rt.service.get(aid)).votes) == 1


async def test_a_redelivered_slack_vote_is_answered_the_same_and_counts_once(marks_gw: Gateway) -> None:
    gw = marks_gw
    aid = await gw.suspend(policy="two")
    socket = gw.channel.socket
    assert socket is not None
    envelope = SocketModeRequest("interactive", "env-vote", gw.button("UALICE", "approve", aid))
    dies = CommitDiesOnce(gw.rt)
    assert await socket.answer(envelope) is None and dies.died
    for _ in range(3):  # the redelivery after the failure votes; the ones after it change nothing
        ack = await socket.answer(envelope)
        assert ack is not None and ack.payload is None
    kinds = await gw.kinds(aid)
    assert kinds.count("vote") == 1 and "duplicate_vote" not in kinds
    await gw.channel.settle()
    assert [r["text"] for r in gw.fake.replies("UALICE")] == ["Your approval is recorded: 1 of 2 approvals."] * 3


async def test_a_slack_extend_envelope_cut_short_before_its_commit_extends_once_when_sent_again(
    marks_gw: Gateway,
) -> None:
    gw = marks_gw
    aid = await gw.suspend(policy="roomy")
    before = await gw.rt.service.get(aid)
    assert before.deadline is not None
    socket = gw.channel.socket
    assert socket is not None
    envelope = SocketModeRequest("interactive", "env-extend", gw.button("UALICE", "extend.1h", aid))
    written = _marks_on_their_own(gw)
    dies = CommitDiesOnce(gw.rt)

    assert await socket.answer(envelope) is None  # not acked: Slack sends the envelope again
    assert dies.died and (await gw.rt.service.get(aid)).extensions == 0
    assert not written  # no mark was left behind to make the redelivery a duplicate

    for _ in range(3):  # the redelivery after the failure extends; the ones after it change nothing
        ack = await socket.answer(envelope)
        assert ack is not None and ack.payload is None
    after = await gw.rt.service.get(aid)
    assert after.extensions == 1 and after.deadline == before.deadline + timedelta(hours=1)  # the policy allows 3
    assert (await gw.kinds(aid)).count("extended") == 1
    assert not written  # the mark committed with the extension
    await gw.channel.settle()
    replies = [r["text"] for r in gw.fake.replies("UALICE")]
    assert len(replies) == 1 and replies[0].startswith("Extended: the new deadline is")  # told once
