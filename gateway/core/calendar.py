"""Business-hours calendars: a policy's clock that runs only in working hours.

A `Calendar` is a time zone, weekly spans of working hours ("Mon-Fri 09:00-18:00") and holidays.
`add(start, duration)` is the instant when `duration` of business time has passed after `start`,
`subtract(end, duration)` the instant that much business time before `end`, and `between(a, b)`
the business time from `a` to `b`. A span lasts the real time that elapses between its local
start and end: each boundary is turned into UTC by the zone on its own day, so a 09:00-18:00 day
is nine hours even on the day the clocks change, and a 00:00-24:00 day is 23 or 25 hours then.
Every function is pure: no clock is read here.

The search for business time is bounded (`SEARCH_DAYS`), and so are a calendar's durations
(`max_duration`: one year of its weekly hours) and holidays (`MAX_HOLIDAYS`), so that the bound
is never reached by a configuration that passed the checks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from itertools import pairwise
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from gateway.core.durations import format_duration
from gateway.core.errors import ValidationError

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
DAY_MINUTES = 24 * 60
SEARCH_DAYS = 3660  # ten years of days: the longest a search for business time runs
MAX_HOLIDAYS = 1000
_RANGE = re.compile(r"^(\d{2}):(\d{2})-(\d{2}):(\d{2})$")
_ZERO = timedelta(0)


@dataclass(frozen=True, slots=True)
class WorkingSpan:
    """Working hours on one weekday (0 is Monday), in minutes after local midnight (end <= 1440)."""

    day: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Calendar:
    """A named business-hours calendar; build one with `parse_calendar` (it checks every field)."""

    name: str
    timezone: str
    hours: str
    holidays: tuple[date, ...] = ()
    spans: tuple[WorkingSpan, ...] = field(default=(), compare=False)
    zone: ZoneInfo = field(default=ZoneInfo("UTC"), compare=False, repr=False)

    # ------------------------------------------------------------ arithmetic

    def add(self, start: datetime, duration: timedelta) -> datetime:
        """The instant when `duration` of business time has passed after `start`. A duration that
        ends exactly where a span ends gives the span's end (Fri 17:00 + 1h is Fri 18:00)."""
        left = duration
        for a, b in self._forward(start):
            a = max(a, start)
            if b - a >= left:
                return a + left
            left -= b - a
        raise self._exhausted("timeout")

    def subtract(self, end: datetime, duration: timedelta) -> datetime:
        """The instant `duration` of business time before `end` (a reminder before a deadline)."""
        left = duration
        for a, b in self._backward(end):
            b = min(b, end)
            if b - a >= left:
                return b - left
            left -= b - a
        raise self._exhausted("remind")

    def between(self, a: datetime, b: datetime) -> timedelta:
        """The business time from `a` to `b` (zero when `b` is not after `a`)."""
        if b <= a:
            return _ZERO
        if b - a > timedelta(days=SEARCH_DAYS):
            raise ValidationError("deadline", f"more than {SEARCH_DAYS} days away")
        total = _ZERO
        for start, end in self._forward(a):
            if start >= b:
                break
            total += min(end, b) - max(start, a)
        return total

    def max_duration(self) -> timedelta:
        """The longest timeout, escalation or extension this calendar counts: one year (52 weeks) of
        its weekly hours, so that even with every holiday the search stays within its bound."""
        return timedelta(minutes=52 * sum(s.end - s.start for s in self.spans))

    def local(self, at: datetime) -> datetime:
        return at.astimezone(self.zone)

    def shown(self, at: datetime) -> str:
        """How a card shows an instant: 'Mon 2026-12-07 12:00 CET', in the calendar's zone."""
        return self.local(at).strftime("%a %Y-%m-%d %H:%M %Z")

    # ------------------------------------------------------------ spans as instants

    def _on(self, day: date) -> list[tuple[datetime, datetime]]:
        """The business spans of a local date as UTC instants (none on a holiday)."""
        if day in self.holidays:
            return []
        out = []
        for span in self.spans:
            if span.day == day.weekday():
                begins, ends = self._instant(day, span.start), self._instant(day, span.end)
                if ends > begins:  # a span inside the hour the clocks skip lasts no time at all
                    out.append((begins, ends))
        return out

    def _instant(self, day: date, minute: int) -> datetime:
        """Local `day` at `minute` after midnight (1440: the next midnight), as UTC. A local time
        that the clocks skip is read with the offset before the change (zoneinfo's fold=0)."""
        if minute == DAY_MINUTES:
            day, minute = day + timedelta(days=1), 0
        local = datetime.combine(day, time(minute // 60, minute % 60), tzinfo=self.zone)
        return local.astimezone(UTC)

    def _forward(self, start: datetime) -> Iterator[tuple[datetime, datetime]]:
        first = self.local(start).date() - timedelta(days=1)  # a span of yesterday may end after start
        for n in range(SEARCH_DAYS):
            for a, b in self._on(first + timedelta(days=n)):
                if b > start:
                    yield a, b

    def _backward(self, end: datetime) -> Iterator[tuple[datetime, datetime]]:
        last = self.local(end).date() + timedelta(days=1)
        for n in range(SEARCH_DAYS):
            for a, b in reversed(self._on(last - timedelta(days=n))):
                if a < end:
                    yield a, b

    def _exhausted(self, field_name: str) -> ValidationError:
        return ValidationError(
            field_name, f"calendar {self.name!r} has not enough business time within {SEARCH_DAYS} days"
        )

    # ------------------------------------------------------------ stored form

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "timezone": self.timezone,
            "hours": self.hours,
            "holidays": [d.isoformat() for d in self.holidays],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Calendar:
        return parse_calendar(str(data["name"]), data)


# ---------------------------------------------------------------- parsing


def parse_calendar(name: str, data: Mapping[str, Any]) -> Calendar:
    """A calendar from its table (`timezone`, `hours`, `holidays`); a ValidationError names the
    bad key. A calendar with no business time at all is refused."""
    unknown = set(data) - {"name", "timezone", "hours", "holidays"}
    if unknown:
        raise ValidationError(sorted(unknown)[0], "unknown calendar key (known: holidays, hours, timezone)")
    zone_name, zone = _zone(data.get("timezone"))
    hours = data.get("hours")
    if not isinstance(hours, str) or not hours.strip():
        raise ValidationError("hours", "required: working hours like 'Mon-Fri 09:00-18:00'")
    spans = parse_hours(hours)
    return Calendar(
        name=name,
        timezone=zone_name,
        hours=", ".join(part.strip() for part in hours.split(",")),
        holidays=_holidays(data.get("holidays", [])),
        spans=spans,
        zone=zone,
    )


def _zone(value: Any) -> tuple[str, ZoneInfo]:
    if not isinstance(value, str) or not value:
        raise ValidationError("timezone", "required: an IANA time zone like 'Europe/Berlin'")
    try:
        return value, ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValidationError("timezone", f"unknown time zone {value!r} (an IANA name like 'Europe/Berlin')") from None


def parse_hours(text: str) -> tuple[WorkingSpan, ...]:
    """'Mon-Thu 09:00-17:00, Fri 09:00-13:00' (several ranges of a day may follow it, like
    'Mon-Fri 09:00-12:00 13:00-17:00'; 24:00 ends a day) -> the spans, by day and start."""
    spans: list[WorkingSpan] = []
    for part in (p.strip() for p in text.split(",")):
        words = part.split()
        if len(words) < 2:
            raise ValidationError("hours", f"{part!r} is not like 'Mon-Fri 09:00-18:00'")
        days = _days(words[0])
        for word in words[1:]:
            start, end = _range(word)
            spans.extend(WorkingSpan(d, start, end) for d in days)
    spans.sort(key=lambda s: (s.day, s.start))
    for before, after in pairwise(spans):
        if before.day == after.day and after.start < before.end:
            raise ValidationError("hours", f"the hours of {DAYS[after.day]} overlap")
    return tuple(spans)


def _days(word: str) -> list[int]:
    """'Mon' or 'Mon-Fri' (a range may wrap: 'Sat-Mon')."""
    first, _, last = word.partition("-")
    a, b = _day(first), _day(last or first)
    return [(a + i) % 7 for i in range((b - a) % 7 + 1)]


def _day(word: str) -> int:
    for i, day in enumerate(DAYS):
        if word.lower() == day.lower():
            return i
    raise ValidationError("hours", f"{word!r} is not a day ({', '.join(DAYS)})")


def _range(word: str) -> tuple[int, int]:
    match = _RANGE.match(word)
    if not match:
        raise ValidationError("hours", f"{word!r} is not a time range like '09:00-18:00'")
    h1, m1, h2, m2 = (int(g) for g in match.groups())
    if h1 > 23 or m1 > 59 or m2 > 59 or h2 > 24 or (h2 == 24 and m2):
        raise ValidationError("hours", f"{word!r} has a time that does not exist (00:00 to 24:00)")
    start, end = h1 * 60 + m1, h2 * 60 + m2
    if end <= start:
        raise ValidationError("hours", f"{word!r} ends before it starts (a span ends the same day, 24:00 at most)")
    return start, end


def _holidays(value: Any) -> tuple[date, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise ValidationError("holidays", "must be a list of dates like ['2026-12-25']")
    if len(value) > MAX_HOLIDAYS:
        raise ValidationError("holidays", f"at most {MAX_HOLIDAYS} dates")
    out: set[date] = set()
    for i, item in enumerate(value):
        if isinstance(item, date) and not isinstance(item, datetime):  # TOML reads a bare date as one
            out.add(item)
            continue
        try:
            out.add(date.fromisoformat(item))
        except (TypeError, ValueError):
            raise ValidationError(f"holidays[{i}]", f"{item!r} is not an ISO date like '2026-12-25'") from None
    return tuple(sorted(out))


def check_duration(calendar: Calendar, field_name: str, duration: timedelta | None) -> None:
    """A ValidationError naming `field_name` when `duration` is longer than the calendar counts."""
    most = calendar.max_duration()
    if duration is not None and duration > most:
        raise ValidationError(
            field_name,
            f"at most {format_duration(most)} of business time with calendar {calendar.name!r} (one year of its hours)",
        )


__all__ = ["DAYS", "SEARCH_DAYS", "Calendar", "WorkingSpan", "check_duration", "parse_calendar", "parse_hours"]
