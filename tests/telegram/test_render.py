"""Pure parts: card text, escaping, size limits, timeout words, and signed callback_data."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from adapters.telegram import callback, render
from gateway.core.models import Approval, Decision, OnTimeout, Outcome, Policy, Source, Status, Vote
from gateway.core.tokens import TokenSigner
from gateway.service.presses import PressOutcome, PressResult
from gateway.testing import TEST_SECRET

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
SIGNER = TokenSigner([TEST_SECRET])


def approval(**over: object) -> Approval:
    base = Approval(
        id="abcdefghijklmnop",
        idempotency_key="k",
        run_id="run-7",
        step="charge",
        title="Pay <b>ACME</b> & sons",
        summary="Invoice <i>#12</i> & fees",
        args={"amount": 4200, "to": "a&b <c>", "tags": ["x", "y"]},
        state=None,
        channels=("telegram:-100",),
        approvers=(),
        policy=Policy(timeout=timedelta(minutes=30)),
        worker=None,
        requested_by=None,
        status=Status.WAITING,
        created_at=NOW,
        deadline=NOW + timedelta(minutes=30),
        args_hash="h",
    )
    return replace(base, **over)  # type: ignore[arg-type]


def test_card_escapes_everything_and_shows_the_facts() -> None:
    text = render.render_card(approval(), NOW)
    assert "<b>Pay &lt;b&gt;ACME&lt;/b&gt; &amp; sons</b>" in text
    assert "Invoice &lt;i&gt;#12&lt;/i&gt; &amp; fees" in text
    assert "<b>ACME</b>" not in text and "<i>#12" not in text
    assert "Run <code>run-7</code> · step <code>charge</code>" in text
    assert "<pre>" in text and "a&amp;b &lt;c&gt;" in text and '["x","y"]' in text
    assert "auto-reject in 30 min" in text and "2030-01-01 12:30 UTC" in text


def test_timeout_words() -> None:
    a = approval()
    assert render.timeout_words(a, NOW + timedelta(minutes=20)) == "auto-reject in 10 min"
    approve = approval(policy=Policy(on_timeout=OnTimeout.APPROVE), deadline=NOW + timedelta(hours=2))
    assert render.timeout_words(approve, NOW) == "auto-approve in 2 h"
    esc = approval(policy=Policy(on_timeout=OnTimeout.ESCALATE, escalate_to=("telegram:-2",)))
    assert render.timeout_words(esc, NOW) == "escalates to telegram:-2 in 30 min"
    assert render.timeout_words(approval(deadline=None), NOW) == "no deadline"


def test_quorum_progress() -> None:
    votes = (Vote("telegram:1", Outcome.APPROVE, NOW),)
    text = render.render_card(approval(policy=Policy(quorum=2), votes=votes), NOW)
    assert "1 of 2 approvals" in text
    markup = render.keyboard(approval(policy=Policy(quorum=2), votes=votes), SIGNER)
    assert markup is not None and markup["inline_keyboard"][0][0]["text"] == "✅ Approve (1/2)"


def test_decided_card_shows_outcome_who_when_comment_and_no_keyboard() -> None:
    d = Decision(
        Outcome.APPROVE, "telegram:42", NOW + timedelta(minutes=3), Source.HUMAN, comment="ok <3", name="@alice"
    )
    a = approval(status=Status.APPROVED, decision=d)
    text = render.render_card(a, NOW)
    assert "✅ <b>Approved</b> by @alice · 2030-01-01 12:03 UTC" in text
    assert "💬 ok &lt;3" in text and "auto-reject" not in text
    assert render.keyboard(a, SIGNER) is None
    person = approval(status=Status.APPROVED, decision=replace(d, person="Alice <CFO>"))
    assert "<b>Approved</b> by Alice &lt;CFO&gt; ·" in render.render_card(person, NOW)  # the person, escaped


def test_huge_card_fits_4096() -> None:
    big = approval(title="T" * 5000, summary="S&" * 5000, args={f"k{i}": "v<" * 3000 for i in range(40)})
    text = render.render_card(big, NOW)
    assert len(text) <= render.MAX_TEXT
    assert "auto-reject in 30 min" in text and "… and 20 more" in text
    assert text.count("<pre>") == text.count("</pre>") == 1


def test_callback_data_fits_64_bytes_and_round_trips() -> None:
    for length in (1, 16, callback.MAX_ID_BYTES):
        approval_id = "x" * length
        for outcome in Outcome:
            data = callback.build(SIGNER, approval_id, outcome)
            assert len(data.encode()) <= 64
            assert callback.parse(SIGNER, data) == callback.Button(approval_id, outcome)
    with pytest.raises(callback.CallbackTooLong):
        callback.build(SIGNER, "x" * (callback.MAX_ID_BYTES + 1), Outcome.APPROVE)
    with pytest.raises(callback.CallbackTooLong):
        callback.build(SIGNER, "ü" * 30, Outcome.APPROVE)  # 60 bytes in UTF-8


def test_an_approve_with_its_round_tag_fits_64_bytes_and_round_trips() -> None:
    seen = "0123456789"  # rounds.TAG_LENGTH characters
    for length in (1, 16, callback.MAX_ID_BYTES):
        data = callback.build(SIGNER, "x" * length, Outcome.APPROVE, seen)
        assert len(data.encode()) <= 64
        assert callback.parse(SIGNER, data) == callback.Button("x" * length, Outcome.APPROVE, seen=seen)
    with pytest.raises(ValueError):
        callback.build(SIGNER, "abcdefghijklmnop", Outcome.REJECT, seen)  # a veto needs no round


def test_callback_data_is_refused_when_forged_or_signed_by_another_key() -> None:
    data = callback.build(SIGNER, "abcdefghijklmnop", Outcome.APPROVE)
    verb, aid, mac = data.split("|")
    assert callback.parse(TokenSigner(["another-secret-key-0123456789"]), data) is None
    assert callback.parse(SIGNER, f"r|{aid}|{mac}") is None
    assert callback.parse(SIGNER, f"{verb}|{aid}x|{mac}") is None
    assert callback.parse(SIGNER, f"{verb}|{aid}|{mac[:-1]}") is None
    assert callback.parse(SIGNER, None) is None
    assert callback.parse(SIGNER, "x" * 65) is None
    rotated = TokenSigner([TEST_SECRET, "newer-secret-key-0123456789"])
    assert callback.parse(rotated, data) is not None  # old buttons keep working after key rotation


def test_answers_say_what_was_committed() -> None:
    waiting = approval(policy=Policy(quorum=2), votes=(Vote("telegram:1", Outcome.APPROVE, NOW),))
    assert render.answer_text(PressOutcome(PressResult.APPROVED, approval())) == "Approved"
    assert render.answer_text(PressOutcome(PressResult.REJECTED, approval()), asks_reason=True).startswith("Rejected. ")
    assert render.answer_text(PressOutcome(PressResult.VOTE, waiting)) == "Vote recorded: 1 of 2 approvals"
    assert render.answer_text(PressOutcome(PressResult.DENIED, approval())) == "Not authorised"
    d = Decision(Outcome.APPROVE, "telegram:2", NOW, name="@bob")
    done = PressOutcome(PressResult.ALREADY_DECIDED, approval(status=Status.APPROVED, decision=d))
    assert render.answer_text(done) == "Already approved by @bob" and done.refused


def _well_formed(text: str) -> bool:
    """Telegram's HTML mode: every '&' starts an entity, tags are balanced, nothing is cut open."""
    import re

    if re.search(r"&(?!(?:lt|gt|amp|quot);)", text) or re.search(r"<[^>]*$", text):
        return False
    stack: list[str] = []
    for closing, name in re.findall(r"<(/?)([a-z]+)[^>]*>", text):
        if not closing:
            stack.append(name)
        elif not stack or stack.pop() != name:
            return False
    return not stack


def test_a_comment_full_of_markup_characters_still_gives_a_valid_card() -> None:
    # Each '<' or '&' costs 4-5 characters once escaped. The card used to be cut at 4096 in the
    # middle of an entity or a tag: Telegram refuses such text, so the outcome sync failed for
    # good and the card kept its live buttons.
    d = Decision(Outcome.REJECT, "telegram:42", NOW, Source.HUMAN, comment="<" * 2000)
    for title in ("Pay", "&" * 300):
        text = render.render_card(approval(title=title, status=Status.REJECTED, decision=d), NOW)
        assert len(text) <= render.MAX_TEXT
        assert _well_formed(text), text[-80:]
        assert "❌ <b>Rejected</b> by telegram:42" in text and "💬 &lt;&lt;" in text


def test_even_an_absurd_card_is_cut_into_valid_html() -> None:
    d = Decision(Outcome.APPROVE, "web:" + "&" * 200, NOW, Source.HUMAN, comment="<" * 2000)
    args = {"&" * 20 + str(i): "<" * 50 for i in range(40)}
    absurd = approval(title="&" * 300, run_id="&" * 200, step="<" * 200, args=args, status=Status.APPROVED, decision=d)
    text = render.render_card(absurd, NOW)
    assert len(text) <= render.MAX_TEXT and _well_formed(text)
