"""Time is injected: production uses `SystemClock`, tests use `gateway.testing.FakeClock`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

from hitl_sdk.times import from_ts, iso, parse_iso, to_ts

__all__ = ["Clock", "SystemClock", "from_ts", "iso", "parse_iso", "to_ts"]


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)
