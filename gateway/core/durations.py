"""Durations written like `30s`, `5m`, `2h`, `1d`, `1h30m`, or a number of seconds."""

from __future__ import annotations

import math
import re
from datetime import timedelta

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
MAX_SECONDS = 3650 * 86400  # ten years: `now + duration` must stay a valid datetime


def parse_duration(value: object) -> timedelta:
    """Parse a duration; raise ValueError with a readable reason."""
    if isinstance(value, bool):
        raise ValueError("expected a duration like '30s', '5m', '2h' or '1d'")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError("a duration cannot be negative")
        return _bounded(value if value <= MAX_SECONDS else math.inf)
    if not isinstance(value, str):
        raise ValueError("expected a duration like '30s', '5m', '2h' or '1d'")
    text = value.strip().lower().replace(" ", "")
    if not text:
        raise ValueError("empty duration")
    pos, total = 0, 0.0
    for match in _PART.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(text):
        raise ValueError(f"{value!r} is not a duration like '30s', '5m', '2h' or '1d'")
    return _bounded(total)


def _bounded(seconds: float) -> timedelta:
    if not seconds <= MAX_SECONDS:  # also NaN and infinity
        raise ValueError("a duration must be finite and at most 3650d (ten years)")
    return timedelta(seconds=seconds)


def format_duration(delta: timedelta) -> str:
    """Render a duration compactly: 5400s -> '1h30m', 0.25s -> '250ms' (a sub-second setting
    is not shown as 0s)."""
    millis = int(delta.total_seconds() * 1000)
    if millis <= 0:
        return "0s"
    seconds, millis = divmod(millis, 1000)
    out = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size:
            out.append(f"{seconds // size}{unit}")
            seconds %= size
    if millis:
        out.append(f"{millis}ms")
    return "".join(out)


def humanize(delta: timedelta) -> str:
    """Render a duration for people: '30 min', '2 h', '1 day'."""
    seconds = round(delta.total_seconds())
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{round(seconds / 60)} min"
    if seconds < 86400:
        hours = seconds / 3600
        return f"{hours:.0f} h" if hours == int(hours) else f"{hours:.1f} h"
    days = seconds / 86400
    unit = "day" if round(days) == 1 else "days"
    return f"{days:.0f} {unit}" if days == int(days) else f"{days:.1f} days"
