"""Property tests (Hypothesis) for the chat parsers that take outside input: Telegram
callback_data and updates, Slack interaction payloads and request signatures."""

from __future__ import annotations

import contextlib
import json
from typing import Any
from urllib.parse import urlencode

from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.slack import parse as slack_parse
from adapters.slack.verify import is_valid, sign
from adapters.telegram import callback
from adapters.telegram.parse import NotAnUpdate, read_update
from gateway.core.models import Outcome
from gateway.core.tokens import TokenSigner
from gateway.testing import TEST_SECRET
from tests.fakes.slack_api import block_actions

SIGNER = TokenSigner([TEST_SECRET])
OTHER = TokenSigner(["another-secret-0123456789"])
FAST = settings(max_examples=200, deadline=None)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=15,
)
IDS = st.text(st.characters(blacklist_characters="|", blacklist_categories=("Cs",)), min_size=1).filter(
    lambda s: len(s.encode()) <= callback.MAX_ID_BYTES
)


# ---------------------------------------------------------------- Telegram callback_data
@FAST
@given(IDS, st.sampled_from(list(Outcome)))
def test_callback_data_roundtrips_within_64_bytes(approval_id: str, outcome: Outcome) -> None:
    data = callback.build(SIGNER, approval_id, outcome)
    assert len(data.encode()) <= 64
    assert callback.parse(SIGNER, data) == callback.Button(approval_id, outcome)
    assert callback.parse(OTHER, data) is None  # another key never verifies


@FAST
@given(IDS, st.sampled_from(list(Outcome)), st.data())
def test_any_edit_of_callback_data_is_refused(approval_id: str, outcome: Outcome, data: st.DataObject) -> None:
    original = callback.build(SIGNER, approval_id, outcome)
    i = data.draw(st.integers(0, len(original) - 1))
    replacement = data.draw(st.characters(blacklist_categories=("Cs",)).filter(lambda c: c != original[i]))
    edited = original[:i] + replacement + original[i + 1 :]
    assert callback.parse(SIGNER, edited) is None


@FAST
@given(st.none() | st.text())
def test_callback_parse_never_raises(data: str | None) -> None:
    assert callback.parse(SIGNER, data) is None or data is not None


# ---------------------------------------------------------------- Telegram updates
_PRESS_KEYS = st.sampled_from(["id", "from", "message", "data", "chat", "message_id", "username", "x"])
_NESTED = st.recursive(JSON, lambda inner: st.dictionaries(_PRESS_KEYS, inner, max_size=4), max_leaves=12)


@FAST
@given(st.dictionaries(st.sampled_from(["update_id", "callback_query", "message", "x"]), _NESTED, max_size=4))
def test_random_update_bodies_only_raise_what_the_webhook_turns_into_400(body: dict[str, Any]) -> None:
    with contextlib.suppress(NotAnUpdate):  # -> 400 in the webhook
        read_update(body)


# ---------------------------------------------------------------- Slack payloads
@FAST
@given(st.binary(max_size=300))
def test_slack_parse_of_any_bytes_is_an_interaction_or_bad_payload(body: bytes) -> None:
    with contextlib.suppress(slack_parse.BadPayload):
        slack_parse.parse(body, SIGNER)


@FAST
@given(JSON)
def test_slack_parse_of_any_json_payload_is_an_interaction_or_bad_payload(payload: Any) -> None:
    body = urlencode({"payload": json.dumps(payload)}).encode()
    with contextlib.suppress(slack_parse.BadPayload):
        slack_parse.parse(body, SIGNER)


@FAST
@given(
    st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40),
    st.sampled_from(["approve", "reject"]),
)
def test_slack_button_reference_roundtrips_and_forgeries_are_refused(approval_id: str, verb: str) -> None:
    ref = slack_parse.make_ref(SIGNER, approval_id)
    body = urlencode({"payload": json.dumps(block_actions("U1", f"hitl:{verb}:{ref}", ref))}).encode()
    press = slack_parse.parse(body, SIGNER)
    assert isinstance(press, slack_parse.SlackPress) and press.approval_id == approval_id and press.verb == verb
    forged = slack_parse.make_ref(OTHER, approval_id)
    body = urlencode({"payload": json.dumps(block_actions("U1", f"hitl:{verb}:{forged}", forged))}).encode()
    try:
        result = slack_parse.parse(body, SIGNER)
    except slack_parse.BadPayload:
        result = None
    assert not isinstance(result, slack_parse.SlackPress)


# ---------------------------------------------------------------- Slack signatures
@FAST
@given(st.binary(max_size=200), st.integers(0, 2_000_000_000), st.integers(-400, 400))
def test_slack_signature_window_and_body_binding(body: bytes, ts: int, skew: int) -> None:
    signature = sign("signing-secret", str(ts), body)
    assert is_valid("signing-secret", body, str(ts), signature, ts + skew) == (abs(skew) <= 300)
    assert not is_valid("signing-secret", body + b"x", str(ts), signature, ts)
    assert not is_valid("other-secret", body, str(ts), signature, ts)


@FAST
@given(st.none() | st.text(max_size=30), st.none() | st.text(max_size=80))
def test_slack_signature_check_never_raises(timestamp: str | None, signature: str | None) -> None:
    assert is_valid("signing-secret", b"payload=x", timestamp, signature, 1_700_000_000) in (True, False)
