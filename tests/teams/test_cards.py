"""Teams over real HTTP: the card posted through the fake Bot Connector, presses answered with
the presser's own card, and the shared card PUT on every outcome."""

from __future__ import annotations

import json
from typing import Any

from gateway.core.models import Status
from tests.fakes.teams_api import CONVERSATION, USER_IDS_MAX
from tests.teams.conftest import ALICE, BOB, MALLORY, MRIS, TeamsEnv


def _verbs(card: dict[str, Any]) -> list[str]:
    """The verbs of the card's Action.Execute buttons (show-cards included, the refresh not)."""
    found: list[str] = []

    def walk(actions: list[dict[str, Any]]) -> None:
        for a in actions:
            if a["type"] == "Action.Execute":
                found.append(a["verb"])
            elif a["type"] == "Action.ShowCard":
                walk(a["card"].get("actions", []))

    walk(card.get("actions", []))
    return found


def _text(card: dict[str, Any]) -> str:
    return json.dumps(card, ensure_ascii=False)


async def test_the_card_is_posted_with_a_refresh_for_the_approvers(teams: TeamsEnv) -> None:
    aid = await teams.suspend()
    activity_id = await teams.posted(aid)
    (post,) = teams.fake.calls_to("POST", "/activities", ok_only=True)
    assert post.body["attachments"][0]["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = teams.card(activity_id)
    assert card["version"] == "1.5" and "Charge ACME $42" in _text(card)
    assert {"title": "amount", "value": "4200"} in card["body"][2]["facts"]
    # everyone sees one "Decide…" button; Alice and Bob get their own view automatically
    assert _verbs(card) == ["refresh"]
    assert card["refresh"]["action"]["verb"] == "refresh"
    assert sorted(card["refresh"]["userIds"]) == sorted([MRIS[ALICE], MRIS[BOB]])
    assert teams.fake.token_requests == 1  # one token for the member look-ups and the post
    assert teams.fake.issuer.jwks_fetches == 1  # the signing keys were fetched at start, before any press


async def test_refresh_gives_an_approver_the_buttons_and_others_none(teams: TeamsEnv) -> None:
    aid = await teams.suspend()
    activity_id = await teams.posted(aid)
    status, answer = await teams.press(ALICE, "refresh", aid, activity_id)
    assert status == 200 and answer["type"] == "application/vnd.microsoft.card.adaptive"
    assert answer["statusCode"] == 200
    assert _verbs(answer["value"]) == ["approve", "reject", "reject"]  # Approve, Reject, the reason form's
    status, answer = await teams.press(MALLORY, "refresh", aid, activity_id)
    assert status == 200 and _verbs(answer["value"]) == ["refresh"]
    assert (await teams.rt.store.get_approval(aid)).status is Status.WAITING  # type: ignore[union-attr]
    assert "denied" not in await teams.event_kinds(aid)  # looking is not pressing


async def test_approve_commits_answers_with_the_card_and_updates_it_for_everyone(teams: TeamsEnv) -> None:
    aid = await teams.suspend()
    activity_id = await teams.posted(aid)
    status, answer = await teams.press(ALICE, "approve", aid, activity_id)
    assert status == 200
    approval = await teams.rt.store.get_approval(aid)  # committed before the answer
    assert approval is not None and approval.status is Status.APPROVED
    assert approval.decision is not None
    assert approval.decision.decided_by == f"teams:{ALICE}"
    assert approval.decision.channel == f"teams:{CONVERSATION}"
    assert "**Approved** by Alice" in _text(answer["value"]) and _verbs(answer["value"]) == []
    await teams.rt.outbox.drain()
    (put,) = teams.fake.calls_to("PUT", f"/activities/{activity_id}", ok_only=True)
    shared = teams.card(activity_id)
    assert put.body["id"] == activity_id
    assert "**Approved** by Alice" in _text(shared)
    assert "actions" not in shared and "refresh" not in shared  # decided: no buttons, no per-user views


async def test_reject_with_a_reason_records_it_on_the_card(teams: TeamsEnv) -> None:
    aid = await teams.suspend(policy="strict")
    activity_id = await teams.posted(aid)
    _, view = await teams.press(BOB, "refresh", aid, activity_id)
    assert _verbs(view["value"]) == ["approve", "reject"]  # require_reason: only the form rejects
    status, answer = await teams.press(BOB, "reject", aid, activity_id)  # the form sent without one
    assert status == 200 and answer["type"] == "application/vnd.microsoft.activity.message"
    assert (await teams.rt.store.get_approval(aid)).status is Status.WAITING  # type: ignore[union-attr]
    status, answer = await teams.press(BOB, "reject", aid, activity_id, reason="Wrong account")
    approval = await teams.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.REJECTED
    assert approval.decision is not None and approval.decision.comment == "Wrong account"
    await teams.rt.outbox.drain()
    shared = _text(teams.card(activity_id))
    assert "**Rejected** by Alice" in shared and "Wrong account" in shared  # 'Alice': the fake's name


async def test_a_quorum_vote_updates_the_card_and_the_voter_sees_their_vote(teams: TeamsEnv) -> None:
    aid = await teams.suspend(policy="two")
    activity_id = await teams.posted(aid)
    _, answer = await teams.press(ALICE, "approve", aid, activity_id)
    assert "You approved: 1 of 2 approvals" in _text(answer["value"])
    assert _verbs(answer["value"]) == []
    await teams.rt.outbox.drain()
    assert "1 of 2 approvals" in _text(teams.card(activity_id))
    _, answer = await teams.press(BOB, "approve", aid, activity_id)
    assert (await teams.rt.store.get_approval(aid)).status is Status.APPROVED  # type: ignore[union-attr]
    await teams.rt.outbox.drain()
    assert len(teams.fake.calls_to("PUT", ok_only=True)) == 2
    assert "**Approved**" in _text(teams.card(activity_id))


async def test_too_big_a_card_is_drawn_compact_under_teams_limit(teams: TeamsEnv) -> None:
    args = {f"field{i}": "*" * 590 for i in range(60)}  # Markdown: each '*' escaped, two bytes
    aid = await teams.suspend(summary="_" * 4000, args=args)
    activity_id = await teams.posted(aid)
    card = teams.card(activity_id)
    (facts,) = [b["facts"] for b in card["body"] if b["type"] == "FactSet"]
    assert len(facts) == 4 and facts[-1] == {"title": "…", "value": "and 57 more"}
    assert "Too long for Teams" in _text(card) and "/approvals/" in _text(card)
    assert all(c.status < 300 for c in teams.fake.calls)


async def test_refresh_user_ids_stay_within_teams_limit(teams: TeamsEnv) -> None:
    many = [f"{i:08x}-0000-4000-8000-000000000000" for i in range(USER_IDS_MAX + 5)]
    teams.fake.members |= {oid: f"29:1u{i}" for i, oid in enumerate(many)}
    teams.channel._ctx = teams.channel._ctx.__class__(  # the allowlist as the runtime would give it
        **{**{f: getattr(teams.channel._ctx, f) for f in teams.channel._ctx.__dataclass_fields__}}
        | {"approvers": frozenset(f"teams:{oid}" for oid in many)}
    )
    aid = await teams.suspend()
    activity_id = await teams.posted(aid)
    assert len(teams.card(activity_id)["refresh"]["userIds"]) == USER_IDS_MAX


async def test_approvers_teams_ids_are_asked_again_after_a_failure_and_learnt_from_presses(teams: TeamsEnv) -> None:
    del teams.fake.members[BOB]  # Teams does not know Bob by his object id (yet)
    teams.fake.fail_members = [503]  # and the first look-up fails
    aid = await teams.suspend(policy="two")
    activity_id = await teams.posted(aid)
    assert teams.card(activity_id)["refresh"]["userIds"] == []  # nobody known yet: the card still posts
    await teams.press(ALICE, "approve", aid, activity_id)  # Alice's id is asked again: she is found
    await teams.rt.outbox.drain()
    assert teams.card(activity_id)["refresh"]["userIds"] == [MRIS[ALICE]]
    _, answer = await teams.press(BOB, "refresh", aid, activity_id)  # Bob's press says who he is in Teams
    assert sorted(answer["value"]["refresh"]["userIds"]) == sorted([MRIS[ALICE], MRIS[BOB]])


async def test_an_object_id_in_upper_case_is_the_same_approver(teams: TeamsEnv) -> None:
    aid = await teams.suspend(policy="two")
    activity_id = await teams.posted(aid)
    _, answer = await teams.press(ALICE.upper(), "approve", aid, activity_id)
    assert "You approved: 1 of 2 approvals" in _text(answer["value"]) and _verbs(answer["value"]) == []
    approval = await teams.rt.store.get_approval(aid)
    assert approval is not None and [v.approver for v in approval.votes] == [f"teams:{ALICE}"]
