"""Discord modals: reject with a reason, and Edit & approve where the suspend allows edits."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.core.models import Status
from tests.discord.support import ALICE, BOB, DiscordEnv

SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "integer", "minimum": 1, "maximum": 5000}, "currency": {"enum": ["EUR", "USD"]}},
}
EDITABLE = {"args_schema": SCHEMA, "editable": ["amount", "currency"]}


def _inputs(modal: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["components"][0]["custom_id"]: row["components"][0] for row in modal["data"]["components"]}


async def test_reject_with_a_reason_opens_a_modal_and_its_submit_rejects(discord: DiscordEnv) -> None:
    aid = await discord.suspend()
    mid = await discord.posted(aid)
    opened = await discord.press(ALICE, discord.button(mid, "Reject with reason…"), mid)
    assert opened.status == 200 and opened.body is not None and opened.body["type"] == 9
    modal = opened.body
    assert list(_inputs(modal)) == ["reason"] and _inputs(modal)["reason"]["required"] is True
    approval = await discord.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.WAITING  # opening decides nothing
    done = await discord.submit(ALICE, modal["data"]["custom_id"], mid, {"reason": "wrong customer"})
    assert (done.status, done.body) == (200, {"type": 6})
    approval = await discord.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.REJECTED
    assert approval.decision is not None and approval.decision.comment == "wrong customer"
    card = json.dumps(discord.message(mid), ensure_ascii=False)
    assert f"**Rejected** by <@{ALICE}>" in card and "wrong customer" in card
    assert discord.message(mid)["components"] == []
    assert discord.fake.failures == []


async def test_require_reason_shows_no_plain_reject_and_a_blank_reason_is_refused(discord: DiscordEnv) -> None:
    aid = await discord.suspend(policy="strict")
    mid = await discord.posted(aid)
    labels = [b["label"] for row in discord.message(mid)["components"] for b in row["components"]]
    assert "Reject" not in labels and "Reject with reason…" in labels
    opened = await discord.press(ALICE, discord.button(mid, "Reject with reason…"), mid)
    assert opened.body is not None
    await discord.submit(ALICE, opened.body["data"]["custom_id"], mid, {"reason": "   "})
    (reply,) = discord.fake.replies(ALICE)
    assert "reason" in reply.lower()
    approval = await discord.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.WAITING


async def test_a_stranger_gets_no_modal(discord: DiscordEnv) -> None:
    aid = await discord.suspend()
    mid = await discord.posted(aid)
    opened = await discord.press("1110000000000000666", discord.button(mid, "Reject with reason…"), mid)
    assert opened.body is not None and opened.body["type"] == 4 and opened.body["data"]["flags"] == 64
    assert "not authorised" in opened.body["data"]["content"]


@pytest.mark.subprocess  # args_schema: the schema pool
async def test_edit_and_approve_through_the_modal(discord: DiscordEnv) -> None:
    aid = await discord.suspend(**EDITABLE)
    mid = await discord.posted(aid)
    opened = await discord.press(ALICE, discord.button(mid, "Edit & approve…"), mid)
    assert opened.body is not None and opened.body["type"] == 9
    inputs = _inputs(opened.body)
    assert (inputs["amount"]["value"], inputs["currency"]["value"]) == ("4200", "USD")
    assert discord.fake.failures == []
    custom_id = opened.body["data"]["custom_id"]
    bad = await discord.submit(ALICE, custom_id, mid, {"amount": "9000", "currency": "EUR"})  # above maximum
    assert bad.body == {"type": 6}
    (refused,) = discord.fake.replies(ALICE)
    assert "amount" in refused
    approval = await discord.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.WAITING and approval.current_args["amount"] == 4200
    await discord.submit(ALICE, custom_id, mid, {"amount": "3900", "currency": "eur"})
    approval = await discord.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.APPROVED
    assert approval.current_args == {"amount": 3900, "currency": "EUR"}
    card = discord.message(mid)
    assert {"name": "amount", "value": "3900", "inline": True} in card["embeds"][0]["fields"]
    assert "4200 → 3900" in json.dumps(card, ensure_ascii=False)


@pytest.mark.subprocess  # args_schema: the schema pool
async def test_an_approve_drawn_before_an_edit_is_refused(discord: DiscordEnv) -> None:
    aid = await discord.suspend(policy="two", **EDITABLE)
    mid = await discord.posted(aid)
    old_approve = discord.button(mid, "Approve")
    opened = await discord.press(ALICE, discord.button(mid, "Edit & approve…"), mid)
    assert opened.body is not None
    await discord.submit(ALICE, opened.body["data"]["custom_id"], mid, {"amount": "3900", "currency": "USD"})
    await discord.press(BOB, old_approve, mid)
    approval = await discord.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.WAITING
    assert all(v.approver != f"discord:{BOB}" for v in approval.votes)
    assert any("arguments changed" in r for r in discord.fake.replies(BOB))
    assert discord.button(mid, "Approve") != old_approve  # the card was redrawn for the new args


async def test_no_edit_button_where_edits_are_not_allowed(discord: DiscordEnv) -> None:
    aid = await discord.suspend()
    mid = await discord.posted(aid)
    with pytest.raises(AssertionError):
        discord.button(mid, "Edit & approve…")


@pytest.mark.subprocess  # args_schema: the schema pool
async def test_more_editable_args_than_a_modal_holds_get_a_one_time_link(discord: DiscordEnv) -> None:
    args = {f"a{i}": i for i in range(6)}
    schema = {"type": "object", "properties": {k: {"type": "integer"} for k in args}}
    aid = await discord.suspend(args=args, args_schema=schema, editable=list(args))
    mid = await discord.posted(aid)
    opened = await discord.press(ALICE, discord.button(mid, "Edit & approve…"), mid)
    assert opened.body is not None and opened.body["type"] == 4 and opened.body["data"]["flags"] == 64
    assert "one-time page" in opened.body["data"]["content"] and "/edit" in opened.body["data"]["content"]
    assert discord.fake.failures == []
