"""Slack: the Edit & approve modal (one input per editable field, errors shown in the modal),
the card showing the change, extend buttons and require_reason."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.core.models import Status
from tests.fakes.slack_api import block_actions, edit_submission, view_submission
from tests.helpers import table_counts
from tests.slack.conftest import CARDS, SlackEnv

SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "integer", "minimum": 1, "maximum": 5000}, "currency": {"enum": ["EUR", "USD"]}},
}
EDITABLE = {"args_schema": SCHEMA, "editable": ["amount", "currency"]}


def _buttons(blocks: list[dict[str, Any]]) -> list[str]:
    return [e["text"]["text"] for b in blocks if b["type"] == "actions" for e in b["elements"]]


async def _modal(slack: SlackEnv, aid: str) -> dict[str, Any]:
    assert (await slack.press("UALICE", "edit", aid)).status == 200
    await slack.channel.settle()
    (opened,) = slack.fake.calls_to("views.open", ok_only=True)
    view = opened["view"]
    return view if isinstance(view, dict) else dict(json.loads(view))


@pytest.mark.subprocess
async def test_the_modal_has_one_input_per_editable_field(slack: SlackEnv) -> None:
    aid = await slack.suspend(**EDITABLE)
    await slack.posted(aid)
    (post,) = slack.fake.calls_to("chat.postMessage")
    assert "Edit & approve…" in _buttons(post["blocks"])
    view = await _modal(slack, aid)
    inputs = {b["block_id"]: b["element"] for b in view["blocks"] if b["type"] == "input"}
    assert inputs["arg:amount"]["type"] == "number_input" and inputs["arg:amount"]["initial_value"] == "4200"
    assert inputs["arg:amount"]["max_value"] == "5000" and inputs["arg:amount"]["is_decimal_allowed"] is False
    assert inputs["arg:currency"]["type"] == "static_select"
    assert [o["text"]["text"] for o in inputs["arg:currency"]["options"]] == ["EUR", "USD"]
    assert "arg:other" not in inputs


@pytest.mark.subprocess
async def test_an_invalid_value_is_shown_in_the_modal_and_changes_nothing(slack: SlackEnv) -> None:
    aid = await slack.suspend(**EDITABLE)
    await slack.posted(aid)
    meta = (await _modal(slack, aid))["private_metadata"]
    before = await table_counts(slack.rt)
    for amount, problem in (("9000", "9000 is greater than the maximum of 5000"), ("lots", "must be an integer")):
        resp = await slack.send(edit_submission("UALICE", meta, {"amount": amount}))
        assert resp.status == 200
        body = await resp.json()
        assert body["response_action"] == "errors" and problem in body["errors"]["arg:amount"]
    assert await table_counts(slack.rt) == before


@pytest.mark.subprocess
async def test_a_valid_submission_approves_with_the_change_shown_on_the_card(slack: SlackEnv) -> None:
    aid = await slack.suspend(**EDITABLE)
    await slack.posted(aid)
    meta = (await _modal(slack, aid))["private_metadata"]
    usd = {"text": {"type": "plain_text", "text": "USD"}, "value": '"USD"'}
    resp = await slack.send(edit_submission("UALICE", meta, {"amount": "3900", "currency": usd}))
    assert resp.status == 200 and await resp.read() == b""  # an empty 200 closes the modal
    approval = await slack.rt.service.get(aid)
    assert approval.status is Status.APPROVED and approval.decision is not None
    assert approval.decision.args is not None and approval.decision.args["amount"] == 3900
    assert approval.decision.args["currency"] == "USD"
    await slack.rt.outbox.drain()
    (update,) = slack.fake.calls_to("chat.update")
    assert "approved with changes by <@UALICE>: amount 4200 → 3900" in json.dumps(update["blocks"], ensure_ascii=False)


async def test_extend_button_and_require_reason(slack: SlackEnv) -> None:
    aid = await slack.suspend(policy="stretch")
    await slack.posted(aid)
    (post,) = slack.fake.calls_to("chat.postMessage")
    assert "+1h" in _buttons(post["blocks"])
    ref = slack.ref(aid)
    press = block_actions("UBOB", f"hitl:extend.1h:{ref}", ref, response_url=slack.fake.response_url("bob"))
    assert (await slack.send(press)).status == 200
    approval = await slack.rt.service.get(aid)
    assert approval.extensions == 1 and approval.deadline is not None and approval.deadline.hour == 14
    again = press | {"trigger_id": "trig-again"}  # pressed again: another interaction
    assert (await slack.send(again)).status == 200  # an old button, past max_extensions
    await slack.channel.settle()
    replies = [r["text"] for r in slack.fake.replies("bob")]
    assert replies[0].startswith("Extended: the new deadline is 2030-01-01 14:00")
    assert "policy 'stretch' allows at most 1 extension" in replies[1]
    await slack.rt.outbox.drain()
    update = slack.fake.calls_to("chat.update")[-1]
    assert "(extended 1×)" in json.dumps(update["blocks"], ensure_ascii=False) and "+1h" not in _buttons(
        update["blocks"]
    )
    strict = await slack.suspend(run_id="run-2", policy="strict")
    await slack.posted(strict)
    card = slack.fake.calls_to("chat.postMessage")[-1]
    assert "Reject" not in _buttons(card["blocks"]) and "Reject with reason…" in _buttons(card["blocks"])
    assert (await slack.press("UALICE", "reject", strict)).status == 200  # an old card's plain Reject
    assert (await slack.rt.service.get(strict)).status is Status.WAITING
    meta = json.dumps({"ref": slack.ref(strict), "channel": CARDS})
    assert (await slack.send(view_submission("UALICE", meta, "wrong customer"))).status == 200
    rejected = await slack.rt.service.get(strict)
    assert rejected.status is Status.REJECTED and rejected.decision is not None
    assert rejected.decision.comment == "wrong customer"
