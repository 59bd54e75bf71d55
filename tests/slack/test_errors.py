"""Pure classification of Slack failures into transient (with Retry-After) or terminal."""

from __future__ import annotations

import pytest

from adapters.slack.errors import TERMINAL, classify, retry_after_seconds


def test_429_waits_exactly_retry_after() -> None:
    err = classify("chat.postMessage", 429, "ratelimited", "7")
    assert (err.transient, err.retry_after, str(err)) == (True, 7.0, "slack chat.postMessage: ratelimited")
    assert classify("chat.update", 429, None, None).retry_after is None  # backoff instead
    assert classify("chat.update", 200, "ratelimited", "3").retry_after == 3.0


SERVER_SIDE = [(500, None), (502, None), (503, "service_unavailable"), (200, "fatal_error")]


@pytest.mark.parametrize(("status", "error"), SERVER_SIDE)
def test_server_side_failures_are_transient(status: int, error: str | None) -> None:
    err = classify("chat.postMessage", status, error)
    assert err.transient and err.retry_after is None


@pytest.mark.parametrize("error", [*sorted(TERMINAL), "some_new_error"])
def test_everything_else_is_terminal(error: str) -> None:
    err = classify("chat.postMessage", 200, error)
    assert not err.transient and str(err) == f"slack chat.postMessage: {error}"


@pytest.mark.parametrize(("header", "seconds"), [("7", 7.0), (" 30 ", 30.0), ("0", 0.0), ("abc", None), ("-1", None)])
def test_retry_after_header(header: str, seconds: float | None) -> None:
    assert retry_after_seconds(header) == seconds
