from __future__ import annotations

from datetime import timedelta

import pytest

from gateway.core.durations import format_duration, humanize, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("5m", 300), ("2h", 7200), ("1d", 86400), ("1h30m", 5400), ("1.5h", 5400), (90, 90), ("250ms", 0.25)],
)
def test_parse(text: object, seconds: float) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("bad", ["", "5", "m5", "5x", "1h 2", "-5m", -1, True, None, [1], "5m5"])
def test_parse_rejects(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(bad)


def test_format_roundtrip() -> None:
    for text in ("30s", "5m", "2h", "1d", "1h30m", "1d2h3m4s"):
        assert format_duration(parse_duration(text)) == text


def test_humanize() -> None:
    assert humanize(timedelta(minutes=30)) == "30 min"
    assert humanize(timedelta(hours=2)) == "2 h"
    assert humanize(timedelta(days=1)) == "1 day"
    assert humanize(timedelta(seconds=12)) == "12 s"


@pytest.mark.parametrize("huge", ["99999999999d", "9" * 400 + "s", float("inf"), float("nan"), 10**20])
def test_parse_rejects_durations_too_long_to_compute_with(huge: object) -> None:
    # A deadline (now + timeout) must stay computable: OverflowError here was a 500 at suspend.
    with pytest.raises(ValueError):
        parse_duration(huge)
