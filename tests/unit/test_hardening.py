"""Issue 13's smaller findings, each pinned: truncated MACs, log-line escaping, the sign-in
throttle's bound, and nesting measured without recursion."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.core.depth import MAX_DEPTH, bytes_depth, text_too_deep, too_deep
from gateway.core.tokens import TokenSigner
from gateway.http.web.auth import LoginThrottle
from gateway.telemetry.logs import SecretFilter, escape_controls

NOW = datetime(2030, 1, 1, tzinfo=UTC)


# ---------------------------------------------------------------- check_mac
def test_check_mac_refuses_anything_shorter_than_the_full_mac() -> None:
    """Finding: `check_mac` compared only as many characters as it was given, so a one-character
    MAC (16 guesses) passed."""
    signer = TokenSigner(["k" * 32, "n" * 32])
    mac = signer.mac("cb", "a|approval", 16)
    assert signer.check_mac("cb", "a|approval", mac, 16)
    for cut in range(16):
        assert not signer.check_mac("cb", "a|approval", mac[:cut], 16), cut
    assert not signer.check_mac("cb", "a|approval", mac + "0", 16)
    assert not signer.check_mac("cb", "a|approval", "\udcff" * 16, 16)  # not ASCII: wrong, never a 500


# ---------------------------------------------------------------- logs
@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("run\n2030-01-01 INFO forged", "run\\n2030-01-01 INFO forged"),
        ("a\rb\tc", "a\\rb\\tc"),
        ("\x1b[2J\x1b[31mred", "\\x1b[2J\\x1b[31mred"),  # terminal escapes
        ("nul\x00del\x7fc1\x85", "nul\\x00del\\x7fc1\\x85"),
        ("line\u2028para\u2029", "line\\u2028para\\u2029"),
        ("\u202eevil", "\\u202eevil"),  # a bidi override reorders what the operator reads
        ("back\\nslash", "back\\\\nslash"),  # an escape in the input cannot pass for one of ours
        ("café ✓", "café ✓"),
    ],
)
def test_log_lines_escape_every_control_character(given: str, shown: str) -> None:
    """Finding: log lines escaped only CR and LF."""
    assert escape_controls(given) == shown


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_a_logged_record_is_printable_whatever_the_input(text: str) -> None:
    record = logging.LogRecord("gateway", logging.INFO, __file__, 1, "run %s done", (text,), None)
    SecretFilter().filter(record)
    line = record.getMessage()
    assert all(ch.isprintable() or ch == " " for ch in line), repr(line)


# ---------------------------------------------------------------- the sign-in throttle
def test_the_throttle_is_bounded_and_never_cleared_wholesale() -> None:
    """Finding: at 10,000 keys the throttle was cleared, so a flood of names unblocked the one
    being guessed. Now the least recently failed keys go, one by one."""
    throttle = LoginThrottle(limit=5, max_keys=100)
    for _ in range(5):
        throttle.failed("10.0.0.1|alice", NOW)
    assert throttle.blocked("10.0.0.1|alice", NOW)
    for i in range(99):  # fill the table: the guessed key is still there
        throttle.failed(f"10.0.0.{i}|flood", NOW)
    assert len(throttle) == 100 and throttle.blocked("10.0.0.1|alice", NOW)
    throttle.failed("10.0.0.1|alice", NOW)  # a fresh failure makes it the most recent
    for i in range(99):
        throttle.failed(f"10.0.1.{i}|flood", NOW)
    assert len(throttle) == 100 and throttle.blocked("10.0.0.1|alice", NOW)
    throttle.failed("10.0.2.0|flood", NOW)  # only now does the oldest entry go
    assert len(throttle) == 100 and not throttle.blocked("10.0.0.1|alice", NOW)
    assert not throttle.blocked("10.0.0.1|alice", NOW + timedelta(minutes=16))


# ---------------------------------------------------------------- nesting depth
def test_depth_is_measured_outside_strings() -> None:
    assert bytes_depth(b'{"a": "[[[[{{{{", "b": ["\\"]]]", {"c": 1}]}') == 3
    assert bytes_depth(b"[]") == 1 and bytes_depth(b'"[[["') == 0


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 10_000), st.booleans())
def test_depth_never_recurses_at_any_depth(depth: int, array: bool) -> None:
    raw = ("[" * depth + "]" * depth) if array else ('{"a":' * depth + "1" + "}" * depth)
    assert bytes_depth(raw.encode()) == depth
    assert too_deep(raw.encode()) is text_too_deep(raw) is (depth > MAX_DEPTH)


def test_a_valid_body_with_many_brackets_but_shallow_is_not_too_deep() -> None:
    raw = json.dumps({"rows": [{"a": [1, 2]} for _ in range(5000)]}).encode()
    assert not too_deep(raw) and bytes_depth(raw) == 4


@pytest.mark.parametrize("depth", [MAX_DEPTH, 700, 5_000])
@pytest.mark.parametrize("field", ["args", "state"])
async def test_in_process_suspends_are_measured_too(runtime: Any, depth: int, field: str) -> None:
    """A caller in process (not over HTTP, whose bodies are measured first) gets the 400 too."""
    from gateway.core.errors import ValidationError
    from gateway.service import SuspendRequest

    value: Any = 1
    for _ in range(depth):  # built without json.loads, which recurses
        value = [value]
    req = SuspendRequest("r", "s", "t", **{field: {"x": value} if field == "args" else value})
    with pytest.raises(ValidationError) as err:
        await runtime.service.suspend(req)
    assert err.value.field == field
    assert await runtime.store.list_approvals() == []
