"""Slack: Approve (a button, or the Edit & approve modal) is bound to the round its card or modal
was drawn for. After an approver changed the args, the old card's Approve and an old modal are
refused and record no vote; the updated card's Approve counts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.core.events import EventKind
from gateway.core.models import Status
from tests.fakes.slack_api import block_actions, edit_submission
from tests.slack.conftest import SlackEnv
from tests.slack.test_edits import EDITABLE, _modal

pytestmark = pytest.mark.subprocess  # every test here starts a process

STALE = "The arguments changed: look at the updated card."


def _approve(blocks: list[dict[str, Any]]) -> tuple[str, str]:
    """(action_id, value) of the card's Approve button."""
    (button,) = [
        e for b in blocks if b["type"] == "actions" for e in b["elements"] if e["action_id"].startswith("hitl:approve")
    ]
    return button["action_id"], button["value"]


def _blocks(call: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = call["blocks"]
    return blocks if isinstance(blocks, list) else list(json.loads(blocks))


async def test_an_approve_drawn_before_an_edit_is_refused_and_the_updated_card_approves(slack: SlackEnv) -> None:
    aid = await slack.suspend(policy="two", **EDITABLE)
    await slack.posted(aid)
    before = _approve(_blocks(slack.fake.calls_to("chat.postMessage")[-1]))
    assert before[0].startswith("hitl:approve.")  # the round tag rides in the action_id
    meta = (await _modal(slack, aid))["private_metadata"]
    assert (await slack.send(edit_submission("UALICE", meta, {"amount": "3900"}))).status == 200
    bob = slack.fake.response_url("bob")
    assert (await slack.send(block_actions("UBOB", *before, response_url=bob))).status == 200
    approval = await slack.rt.service.get(aid)
    assert approval.status is Status.WAITING and [v.approver for v in approval.votes] == ["slack:UALICE"]
    kinds = [e.kind for e in await slack.rt.store.list_events(aid) if e.actor == "slack:UBOB"]
    assert EventKind.VOTE not in kinds and EventKind.APPROVED not in kinds
    await slack.channel.settle()
    assert [r["text"] for r in slack.fake.replies("bob")] == [STALE]
    await slack.rt.outbox.drain()
    after = _approve(_blocks(slack.fake.calls_to("chat.update")[-1]))
    assert after != before
    assert (await slack.send(block_actions("UBOB", *after, response_url=bob))).status == 200
    done = await slack.rt.service.get(aid)
    assert done.status is Status.APPROVED and done.decision is not None and done.decision.args is not None
    assert done.decision.args["amount"] == 3900


async def test_a_modal_opened_before_an_edit_is_refused_and_a_card_without_tags_means_the_original_args(
    slack: SlackEnv,
) -> None:
    aid = await slack.suspend(policy="two", **EDITABLE)
    await slack.posted(aid)
    alice = (await _modal(slack, aid))["private_metadata"]
    assert (await slack.press("UBOB", "edit", aid)).status == 200
    await slack.channel.settle()
    opened = slack.fake.calls_to("views.open", ok_only=True)[-1]["view"]
    bob = (opened if isinstance(opened, dict) else json.loads(opened))["private_metadata"]
    assert (await slack.send(edit_submission("UALICE", alice, {"amount": "3900"}))).status == 200
    resp = await slack.send(edit_submission("UBOB", bob, {"amount": "4100"}))  # built on 4200
    body = await resp.json()
    assert body["response_action"] == "errors" and "The arguments changed" in body["errors"]["arg:amount"]
    approval = await slack.rt.service.get(aid)
    assert approval.proposal is not None and approval.proposal.args["amount"] == 3900  # not undone
    assert [v.approver for v in approval.votes] == ["slack:UALICE"]
    # an Approve drawn before round tags (`hitl:approve:<ref>`) stands for the original args
    assert (await slack.press("UBOB", "approve", aid)).status == 200
    assert (await slack.rt.service.get(aid)).approvals_count == 1
    assert (await slack.press("UBOB", "reject", aid)).status == 200  # a veto on any round
    assert (await slack.rt.service.get(aid)).status is Status.REJECTED
