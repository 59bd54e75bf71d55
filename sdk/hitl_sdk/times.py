"""Timestamps as the gateway writes them: UTC, RFC 3339 with `Z` in the API, Unix seconds stored."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["from_ts", "iso", "parse_iso", "to_ts"]


def from_ts(ts: float | None) -> datetime | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC)


def to_ts(dt: datetime | None) -> float | None:
    return None if dt is None else dt.timestamp()


def iso(dt: datetime | None) -> str | None:
    return None if dt is None else dt.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_iso(value: str) -> datetime:
    """An API date-time (`...Z` or an offset) as an aware datetime."""
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
