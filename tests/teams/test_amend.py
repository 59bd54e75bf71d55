"""Teams: the policy's '+1h' extend button, and "Approve · 1h" standing grants."""

from __future__ import annotations

import json
from typing import Any

from gateway.core.models import Status
from tests.teams.conftest import ALICE, BOB, TeamsEnv


def _buttons(card: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {a["title"]: a for a in card.get("actions", []) if a["type"] == "Action.Execute"}


async def test_extend_moves_the_deadline_once_as_the_policy_allows(teams: TeamsEnv) -> None:
    aid = await teams.suspend(policy="stretch")
    card_id = await teams.posted(aid)
    before = await teams.rt.store.get_approval(aid)
    assert before is not None and before.deadline is not None
    _, view = await teams.press(BOB, "refresh", aid, card_id)
    extend = _buttons(view["value"])["+1h"]
    assert extend["verb"] == "extend" and extend["data"]["by"] == "1h"
    status, answer = await teams.press(BOB, "extend", aid, card_id, by="1h")
    assert status == 200 and "Extended: the new deadline is" in json.dumps(answer, ensure_ascii=False)
    after = await teams.rt.store.get_approval(aid)
    assert after is not None and after.deadline is not None and after.extensions == 1
    assert (after.deadline - before.deadline).total_seconds() == 3600
    assert "+1h" not in _buttons(answer["value"])  # the policy allows one: no more button
    status, answer = await teams.press(BOB, "extend", aid, card_id, by="1h")  # an old card's button
    assert answer["type"] == "application/vnd.microsoft.activity.message"
    assert "at most 1 extension" in answer["value"]
    await teams.rt.outbox.drain()
    assert "(extended 1×)" in json.dumps(teams.card(card_id), ensure_ascii=False)


async def test_approve_for_1h_makes_a_standing_grant(teams: TeamsEnv) -> None:
    aid = await teams.suspend(policy="trusted")
    card_id = await teams.posted(aid)
    _, view = await teams.press(ALICE, "refresh", aid, card_id)
    offers = {t: b["data"]["grant"] for t, b in _buttons(view["value"]).items() if b["verb"] == "grant"}
    assert offers == {"Approve · 1h": "1h", "Approve · this run": "run"}
    status, _ = await teams.press(ALICE, "grant", aid, card_id, grant="1h")
    assert status == 200
    approval = await teams.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.APPROVED
    [grant] = await teams.rt.store.list_grants(teams.clock.now())
    assert (grant.granted_by, grant.duration) == (f"teams:{ALICE}", "1h")


async def test_a_grant_the_policy_does_not_offer_is_refused(teams: TeamsEnv) -> None:
    aid = await teams.suspend(policy="trusted")
    card_id = await teams.posted(aid)
    _, answer = await teams.press(ALICE, "grant", aid, card_id, grant="8h")
    assert answer["type"] == "application/vnd.microsoft.activity.message"
    assert (await teams.rt.store.get_approval(aid)).status is Status.WAITING  # type: ignore[union-attr]
    assert await teams.rt.store.list_grants(teams.clock.now()) == []
