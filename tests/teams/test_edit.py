"""Teams: Edit & approve, one input per editable arg in the approver's card, the edit checked by
the service (a refused value changes nothing), and the shared card showing the change."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.core.models import Status
from tests.helpers import table_counts
from tests.teams.conftest import ALICE, BOB, TeamsEnv

pytestmark = pytest.mark.subprocess  # args_schema is checked in the schema pool's process
SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "integer", "minimum": 1, "maximum": 5000}, "currency": {"enum": ["EUR", "USD"]}},
}
EDITABLE = {"args_schema": SCHEMA, "editable": ["amount", "currency"]}


def _edit_form(card: dict[str, Any]) -> dict[str, Any]:
    (form,) = [a["card"] for a in card["actions"] if a["type"] == "Action.ShowCard" and "Edit" in a["title"]]
    return dict(form)


async def test_the_approver_edits_and_the_card_shows_the_change(teams: TeamsEnv) -> None:
    aid = await teams.suspend(**EDITABLE)
    card_id = await teams.posted(aid)
    _, view = await teams.press(ALICE, "refresh", aid, card_id)
    form = _edit_form(view["value"])
    inputs = {i["id"]: i for i in form["body"]}
    assert inputs["arg.amount"]["type"] == "Input.Number" and inputs["arg.amount"]["value"] == 4200
    assert inputs["arg.amount"]["max"] == 5000
    assert inputs["arg.currency"]["type"] == "Input.ChoiceSet"
    assert [c["value"] for c in inputs["arg.currency"]["choices"]] == ['"EUR"', '"USD"']
    assert form["actions"][0]["verb"] == "edit"

    before = await table_counts(teams.rt)
    status, answer = await teams.press(ALICE, "edit", aid, card_id, **{"arg.amount": "9999", "arg.currency": '"USD"'})
    assert status == 200 and answer["type"] == "application/vnd.microsoft.activity.message"
    assert "amount" in answer["value"] and "nothing changed" in answer["value"]
    assert await table_counts(teams.rt) == before

    status, answer = await teams.press(ALICE, "edit", aid, card_id, **{"arg.amount": "3900", "arg.currency": '"USD"'})
    assert status == 200 and answer["type"] == "application/vnd.microsoft.card.adaptive"
    approval = await teams.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.APPROVED
    assert approval.decision is not None and approval.decision.args == {"amount": 3900, "currency": "USD"}
    await teams.rt.outbox.drain()
    shared = json.dumps(teams.card(card_id), ensure_ascii=False)
    assert "approved with changes by Alice" in shared and "4200 → 3900" in shared
    assert {"title": "amount", "value": "3900"} in teams.card(card_id)["body"][2]["facts"]


async def test_an_approve_drawn_before_an_edit_is_refused(teams: TeamsEnv) -> None:
    aid = await teams.suspend(policy="two", **EDITABLE)
    card_id = await teams.posted(aid)
    old = await teams.data(aid)  # the round tag of the card as first drawn
    await teams.press(ALICE, "edit", aid, card_id, **{"arg.amount": "3900", "arg.currency": '"USD"'})
    assert "edited" in await teams.event_kinds(aid)
    status, answer = await teams.press(BOB, "approve", aid, card_id, seen=old["seen"])
    assert status == 200 and "arguments changed" in json.dumps(answer)
    approval = await teams.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.WAITING
    assert [v.approver for v in approval.votes] == [f"teams:{ALICE}"]  # the editor's, on the new args
