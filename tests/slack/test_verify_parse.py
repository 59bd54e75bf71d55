"""Pure: v0 signatures with the 5-minute window, the signed reference, payload parsing."""

from __future__ import annotations

import json
from dataclasses import replace
from urllib.parse import urlencode

import pytest

from adapters.slack.parse import BadPayload, Ignored, SlackPress, Submission, check_ref, make_ref, parse
from adapters.slack.verify import is_valid, sign
from gateway.core.tokens import TokenSigner
from gateway.testing import TEST_SECRET
from tests.fakes.slack_api import TEAM_ID, block_actions, view_submission

SECRET = "signing-secret"
BODY = b"payload=%7B%7D"
NOW = 1_900_000_000


def test_valid_signature() -> None:
    assert is_valid(SECRET, BODY, str(NOW), sign(SECRET, str(NOW), BODY), NOW)
    assert is_valid(SECRET, BODY, str(NOW - 300), sign(SECRET, str(NOW - 300), BODY), NOW)


@pytest.mark.parametrize(
    ("body", "ts", "sig", "why"),
    [
        (BODY + b"x", str(NOW), sign(SECRET, str(NOW), BODY), "tampered body"),
        (BODY, str(NOW), sign("other-secret", str(NOW), BODY), "wrong secret"),
        (BODY, str(NOW), "v0=" + "0" * 64, "forged signature"),
        (BODY, str(NOW - 301), sign(SECRET, str(NOW - 301), BODY), "stale"),
        (BODY, str(NOW + 301), sign(SECRET, str(NOW + 301), BODY), "from the future"),
        (BODY, None, sign(SECRET, str(NOW), BODY), "missing timestamp"),
        (BODY, str(NOW), None, "missing signature"),
        (BODY, "abc", sign(SECRET, "abc", BODY), "non-numeric timestamp"),
        (BODY, "1.9e9", sign(SECRET, "1.9e9", BODY), "float timestamp"),
        (BODY, "-5", sign(SECRET, "-5", BODY), "negative timestamp"),
        (BODY, " 1900000000", sign(SECRET, " 1900000000", BODY), "padded timestamp"),
        (BODY, "١٩٠٠٠٠٠٠٠٠", sign(SECRET, "١٩٠٠٠٠٠٠٠٠", BODY), "non-ASCII digits"),
        (BODY, "9" * 40, sign(SECRET, "9" * 40, BODY), "huge timestamp"),
        (BODY, "", sign(SECRET, "", BODY), "empty timestamp"),
    ],
)
def test_invalid_signatures(body: bytes, ts: str | None, sig: str | None, why: str) -> None:
    assert not is_valid(SECRET, body, ts, sig, NOW), why


def test_no_secret_never_validates() -> None:
    assert not is_valid("", BODY, str(NOW), sign("", str(NOW), BODY), NOW)


def test_ref_is_signed_and_survives_key_rotation() -> None:
    old = TokenSigner([TEST_SECRET])
    ref = make_ref(old, "abc123")
    assert check_ref(old, ref) == "abc123"
    assert check_ref(TokenSigner([TEST_SECRET, "a-newer-secret-key-0123456789"]), ref) == "abc123"
    assert check_ref(TokenSigner(["a-completely-different-key-000"]), ref) is None
    assert check_ref(old, "abc124" + ref[6:]) is None
    assert check_ref(old, ref[:-1] + ("0" if ref[-1] != "0" else "1")) is None
    assert check_ref(old, "no-dot") is None


def _form(payload: object) -> bytes:
    return urlencode({"payload": json.dumps(payload)}).encode()


def test_parse_press_and_submission() -> None:
    signer = TokenSigner([TEST_SECRET])
    ref = make_ref(signer, "appr1")
    pressed = block_actions("U1", f"hitl:approve:{ref}", ref, response_url="https://x/y", trigger_id="trig-123")
    press = parse(_form(pressed), signer)
    assert press == SlackPress(
        "approve", "appr1", "U1", "C0CARDS", "1700000001.000001", "https://x/y", "trig-123", teams=(TEAM_ID,)
    )
    meta = json.dumps({"ref": ref, "channel": "C0CARDS"})
    sub = parse(_form(view_submission("U2", meta, "  too risky  ") | {"trigger_id": "trig-9"}), signer)
    assert sub == Submission("appr1", "U2", "C0CARDS", "too risky", (TEAM_ID,), "trig-9")
    # a guest from another organisation in a shared channel: both workspaces are named
    guest = block_actions("U3", f"hitl:reject:{ref}", ref, trigger_id="trig-123")
    guest |= {"user": {"id": "U3", "team_id": "t0guest"}}
    assert parse(_form(guest), signer) == replace(
        press, verb="reject", user_id="U3", response_url="", teams=(TEAM_ID, "T0GUEST")
    )


def test_parse_refuses_forged_or_mismatched_buttons() -> None:
    signer = TokenSigner([TEST_SECRET])
    ref = make_ref(signer, "appr1")
    forged = "appr2" + ref[5:]
    with pytest.raises(BadPayload):
        parse(_form(block_actions("U1", f"hitl:approve:{forged}", forged)), signer)
    with pytest.raises(BadPayload):  # action_id and value disagree
        parse(_form(block_actions("U1", f"hitl:approve:{ref}", forged)), signer)
    with pytest.raises(BadPayload):
        parse(_form(block_actions("U1", f"hitl:launch:{ref}", ref)), signer)
    with pytest.raises(BadPayload):
        parse(_form(view_submission("U1", json.dumps({"ref": forged}), "x")), signer)
    with pytest.raises(BadPayload):
        parse(_form(view_submission("U1", "not json", "x")), signer)


@pytest.mark.parametrize("body", [b"", b"payload=", b"payload=%5B%5D", b"nopayload=1", b"\xff\xfe", b"payload=%7Bx"])
def test_parse_malformed_bodies(body: bytes) -> None:
    with pytest.raises(BadPayload):
        parse(body, TokenSigner([TEST_SECRET]))


def test_parse_ignores_other_interactions() -> None:
    signer = TokenSigner([TEST_SECRET])
    assert isinstance(parse(_form({"type": "view_closed"}), signer), Ignored)
    assert isinstance(parse(_form(block_actions("U1", "other_app_button", "v")), signer), Ignored)
