"""Pure Block Kit rendering: the card's parts, Slack's limits, the decided form, quorum progress."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from adapters.slack import render
from gateway.core import policy as rules
from gateway.core.models import Approval, Outcome, Policy, Status, Vote

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
REF = "abcdefghijklmnop." + "0" * 32


def approval(**over: Any) -> Approval:
    base = Approval(
        id="abcdefghijklmnop",
        idempotency_key="k",
        run_id="run-1",
        step="charge",
        title="Charge ACME $42",
        summary="Monthly invoice",
        args={"amount": 4200, "currency": "USD"},
        state=None,
        channels=("slack:C1",),
        approvers=(),
        policy=Policy(),
        worker=None,
        requested_by=None,
        status=Status.WAITING,
        created_at=NOW,
        deadline=NOW + timedelta(minutes=30),
        args_hash="h",
    )
    return base.evolve(**over)


def by_type(blocks: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [b for b in blocks if b["type"] == kind]


def test_waiting_card_has_header_fields_context_and_three_buttons() -> None:
    blocks = render.card_blocks(approval(), REF)
    assert by_type(blocks, "header")[0]["text"]["text"] == "Charge ACME $42"
    section = by_type(blocks, "section")[0]
    assert section["text"]["text"] == "Monthly invoice"
    assert [f["text"] for f in section["fields"]] == ["*amount*\n4200", "*currency*\nUSD"]
    context = by_type(blocks, "context")[0]["elements"][0]["text"]
    for part in ("Run `run-1`", "Step `charge`", "Deadline <!date^", "Policy `default`"):
        assert part in context
    (actions,) = by_type(blocks, "actions")
    approve, reject, reason = actions["elements"]
    assert (approve["style"], reject["style"], "style" in reason) == ("primary", "danger", False)
    assert approve["confirm"]["title"]["text"] and "Charge ACME" in approve["confirm"]["text"]["text"]
    assert reason["text"]["text"] == "Reject with reason…"
    for button, verb in ((approve, "approve"), (reject, "reject"), (reason, "reason")):
        assert button["action_id"] == f"hitl:{verb}:{REF}" and button["value"] == REF


def test_limits_are_respected_for_huge_inputs() -> None:
    huge = approval(
        title="T" * 1000,
        summary="<&>" * 5000,
        args={f"key{i}": "v" * 5000 for i in range(30)},
        run_id="r" * 5000,
    )
    blocks = render.card_blocks(huge, REF)
    assert len(blocks) <= 50
    assert len(by_type(blocks, "header")[0]["text"]["text"]) <= render.HEADER_MAX
    section = by_type(blocks, "section")[0]
    assert len(section["text"]["text"]) <= render.SECTION_MAX
    assert "&amp;" in section["text"]["text"] and "<" not in section["text"]["text"]
    assert len(section["fields"]) == render.FIELDS_MAX
    assert section["fields"][-1]["text"] == "_…and 21 more_"
    assert all(len(f["text"]) <= render.FIELD_MAX for f in section["fields"])
    assert len(by_type(blocks, "context")[0]["elements"][0]["text"]) <= render.SECTION_MAX
    for button in by_type(blocks, "actions")[0]["elements"]:
        assert len(button["text"]["text"]) <= render.BUTTON_MAX
        assert len(button["action_id"]) <= render.ACTION_ID_MAX
        assert len(button["value"]) <= render.VALUE_MAX
        if "confirm" in button:
            assert len(button["confirm"]["text"]["text"]) <= render.CONFIRM_TEXT_MAX
            assert len(button["confirm"]["title"]["text"]) <= render.CONFIRM_TITLE_MAX


def test_fit_never_splits_an_escape() -> None:
    for n in range(3, 30):
        out = render.fit("&" * 100, n)
        assert len(out) <= n and out.endswith("…") and out[:-1].replace("&amp;", "") == ""


def _decided(outcome: Outcome, who: str, comment: str | None = None, **over: Any) -> Approval:
    vote = Vote(who, outcome, NOW + timedelta(minutes=3), comment, "slack:C1")
    return rules.apply_vote(approval(**over), vote).approval


def test_decided_card_shows_outcome_who_when_comment_and_no_buttons() -> None:
    rejected = _decided(Outcome.REJECT, "slack:UALICE", "too risky\nsecond line")
    blocks = render.card_blocks(rejected, REF)
    assert not by_type(blocks, "actions")
    text = by_type(blocks, "section")[-1]["text"]["text"]
    assert "*Rejected* by <@UALICE>" in text
    assert f"<!date^{int((NOW + timedelta(minutes=3)).timestamp())}^" in text
    assert "> too risky\n> second line" in text
    approved = render.card_blocks(_decided(Outcome.APPROVE, "web:alice"), REF)
    assert "*Approved* by alice (web)" in by_type(approved, "section")[-1]["text"]["text"]
    assert "actions" not in json.dumps([b["type"] for b in approved])


def test_timed_out_and_cancelled_forms() -> None:
    timed = rules.time_out(approval(), NOW + timedelta(hours=1)).approval
    text = render.outcome_text(timed)
    assert "Timed out" in text and "rejected by policy" in text and "no decision after" in text
    cancelled = rules.cancel(approval(), "api", "not needed", NOW).approval
    assert "*Cancelled* by api" in render.outcome_text(cancelled)
    assert not by_type(render.card_blocks(cancelled, REF), "actions")


def test_quorum_progress_keeps_the_buttons() -> None:
    voted = _decided(Outcome.APPROVE, "slack:UALICE", policy=Policy(quorum=2))
    assert voted.status is Status.WAITING
    blocks = render.card_blocks(voted, REF)
    assert "1 of 2 approvals" in by_type(blocks, "context")[0]["elements"][0]["text"]
    assert by_type(blocks, "actions")


def test_reason_modal_and_texts() -> None:
    modal = render.reason_modal(approval(title="x" * 5000), REF, "C1")
    assert len(modal["title"]["text"]) <= render.MODAL_TITLE_MAX
    assert json.loads(modal["private_metadata"]) == {"ref": REF, "channel": "C1"}
    element = modal["blocks"][1]["element"]
    assert element["multiline"] is True and modal["blocks"][1]["block_id"] == render.REASON_BLOCK
    assert render.already_text(_decided(Outcome.APPROVE, "slack:UB")) == "Already approved by <@UB>; nothing changed."
    assert render.card_text(approval()) == "Approval needed: Charge ACME $42"
