"""Business-hours arithmetic (gateway.core.calendar): pure, no clock, no database."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from gateway.core.calendar import Calendar, parse_calendar
from gateway.core.errors import ValidationError

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
H = timedelta(hours=1)


def cal(hours: str = "Mon-Fri 09:00-18:00", zone: str = "Europe/Berlin", holidays: Any = ()) -> Calendar:
    return parse_calendar("office", {"timezone": zone, "hours": hours, "holidays": list(holidays)})


def berlin(*args: int) -> datetime:
    return datetime(*args, tzinfo=BERLIN)  # type: ignore[misc]


def new_york(*args: int) -> datetime:
    return datetime(*args, tzinfo=NEW_YORK)  # type: ignore[misc]


def test_friday_evening_runs_over_the_weekend_to_monday() -> None:
    c = cal()
    start = berlin(2026, 12, 4, 17, 0)  # a Friday
    deadline = c.add(start, 4 * H)
    assert deadline == berlin(2026, 12, 7, 12, 0)
    assert c.shown(deadline) == "Mon 2026-12-07 12:00 CET"
    assert c.between(start, deadline) == 4 * H
    assert c.subtract(deadline, 4 * H) == start
    assert c.subtract(deadline, 3 * H) == berlin(2026, 12, 7, 9, 0)  # Monday's opening, not Friday's close
    assert c.subtract(deadline, 3.5 * H) == berlin(2026, 12, 4, 17, 30)


def test_a_span_end_is_reached_not_skipped() -> None:
    c = cal()
    assert c.add(berlin(2026, 12, 4, 17, 0), H) == berlin(2026, 12, 4, 18, 0)
    assert c.add(berlin(2026, 12, 5, 10, 0), H) == berlin(2026, 12, 7, 10, 0)  # from Saturday
    assert c.add(berlin(2026, 12, 7, 6, 0), timedelta(0)) == berlin(2026, 12, 7, 9, 0)
    assert c.between(berlin(2026, 12, 5, 0, 0), berlin(2026, 12, 6, 23, 0)) == timedelta(0)
    assert c.between(berlin(2026, 12, 7, 12, 0), berlin(2026, 12, 7, 11, 0)) == timedelta(0)


def test_a_holiday_has_no_hours() -> None:
    c = cal(holidays=["2026-12-25", date(2026, 12, 28)])
    start = berlin(2026, 12, 24, 17, 0)  # Thursday; Friday and Monday are holidays
    deadline = c.add(start, 4 * H)
    assert deadline == berlin(2026, 12, 29, 12, 0)
    assert c.between(start, deadline) == 4 * H
    assert c.subtract(deadline, 4 * H) == start


def test_spring_forward_in_berlin() -> None:
    c = cal()
    start = berlin(2026, 3, 27, 17, 0)  # Friday before the change on Sunday 2026-03-29
    deadline = c.add(start, 4 * H)
    assert deadline == berlin(2026, 3, 30, 12, 0)
    assert deadline.astimezone(UTC) == datetime(2026, 3, 30, 10, 0, tzinfo=UTC)
    assert c.shown(deadline) == "Mon 2026-03-30 12:00 CEST"
    assert c.subtract(deadline, 4 * H) == start


def test_fall_back_in_berlin() -> None:
    c = cal()
    start = berlin(2026, 10, 23, 17, 0)  # Friday before the change on Sunday 2026-10-25
    deadline = c.add(start, 4 * H)
    assert deadline.astimezone(UTC) == datetime(2026, 10, 26, 11, 0, tzinfo=UTC)
    assert c.shown(deadline) == "Mon 2026-10-26 12:00 CET"
    assert c.between(start, deadline) == 4 * H


def test_spans_last_real_elapsed_time_on_the_day_of_a_change() -> None:
    c = cal("Sun 01:00-04:00")  # the clocks skip 02:00-03:00 in March and repeat it in October
    assert c.between(berlin(2026, 3, 28, 0, 0), berlin(2026, 3, 30, 0, 0)) == 2 * H
    assert c.between(berlin(2026, 10, 24, 0, 0), berlin(2026, 10, 26, 0, 0)) == 4 * H
    whole = cal("Mon-Sun 00:00-24:00")
    saturday_noon = berlin(2026, 3, 28, 12, 0)
    assert whole.add(saturday_noon, 24 * H) == berlin(2026, 3, 29, 13, 0)  # 24 real hours
    assert whole.between(berlin(2026, 10, 25, 0, 0), berlin(2026, 10, 26, 0, 0)) == 25 * H
    nine_to_six = cal("Sun 09:00-18:00")
    assert nine_to_six.between(berlin(2026, 3, 29, 0, 0), berlin(2026, 3, 30, 0, 0)) == 9 * H


def test_both_changes_in_new_york() -> None:
    c = cal(zone="America/New_York")
    spring = c.add(new_york(2026, 3, 6, 17, 0), 4 * H)  # the clocks change on Sunday 2026-03-08
    assert spring.astimezone(UTC) == datetime(2026, 3, 9, 16, 0, tzinfo=UTC)
    assert c.shown(spring) == "Mon 2026-03-09 12:00 EDT"
    autumn = c.add(new_york(2026, 10, 30, 17, 0), 4 * H)  # back on Sunday 2026-11-01
    assert autumn.astimezone(UTC) == datetime(2026, 11, 2, 17, 0, tzinfo=UTC)
    assert c.shown(autumn) == "Mon 2026-11-02 12:00 EST"
    sunday = cal("Sun 09:00-18:00", zone="America/New_York")
    assert sunday.between(new_york(2026, 3, 8, 0, 0), new_york(2026, 3, 9, 0, 0)) == 9 * H


def test_24_00_ends_a_day_and_joins_the_next() -> None:
    c = cal("Sat 20:00-24:00, Sun 00:00-02:00")
    assert c.add(berlin(2026, 12, 5, 23, 0), 2 * H) == berlin(2026, 12, 6, 1, 0)
    assert c.subtract(berlin(2026, 12, 6, 1, 0), 2 * H) == berlin(2026, 12, 5, 23, 0)
    assert c.add(berlin(2026, 12, 5, 20, 0), 4 * H) == berlin(2026, 12, 6, 0, 0)


def test_several_spans_and_a_lunch_break() -> None:
    short_friday = cal("Mon-Thu 09:00-17:00, Fri 09:00-13:00")
    assert short_friday.add(berlin(2026, 12, 4, 12, 0), 4 * H) == berlin(2026, 12, 7, 12, 0)
    assert short_friday.between(berlin(2026, 11, 30, 0, 0), berlin(2026, 12, 7, 0, 0)) == 36 * H
    lunch = cal("Mon-Fri 09:00-12:00 13:00-17:00")
    assert lunch.add(berlin(2026, 12, 7, 11, 0), 2 * H) == berlin(2026, 12, 7, 14, 0)
    assert lunch.subtract(berlin(2026, 12, 7, 14, 0), 2 * H) == berlin(2026, 12, 7, 11, 0)
    weekend = cal("Sat-Mon 10:00-11:00")  # a range may wrap past Sunday
    assert [s.day for s in weekend.spans] == [0, 5, 6]


def test_stored_form_round_trips() -> None:
    c = cal("mon-fri 09:00-18:00 ,  sat 10:00-12:00", holidays=["2026-12-26", "2026-12-25", "2026-12-25"])
    data = c.to_json()
    assert data == {
        "name": "office",
        "timezone": "Europe/Berlin",
        "hours": "mon-fri 09:00-18:00, sat 10:00-12:00",
        "holidays": ["2026-12-25", "2026-12-26"],
    }
    back = Calendar.from_json(data)
    assert back == c and back.spans == c.spans


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        ({"hours": "Mon-Fri 09:00-18:00"}, "timezone", "required"),
        ({"timezone": "Mars/Olympus", "hours": "Mon 09:00-10:00"}, "timezone", "unknown time zone"),
        ({"timezone": "../../etc/passwd", "hours": "Mon 09:00-10:00"}, "timezone", "unknown time zone"),
        ({"timezone": "UTC"}, "hours", "required"),
        ({"timezone": "UTC", "hours": "  "}, "hours", "required"),
        ({"timezone": "UTC", "hours": "Mon-Fri"}, "hours", "not like"),
        ({"timezone": "UTC", "hours": "Mon-Fry 09:00-18:00"}, "hours", "not a day"),
        ({"timezone": "UTC", "hours": "Mon 9-17"}, "hours", "not a time range"),
        ({"timezone": "UTC", "hours": "Mon 18:00-09:00"}, "hours", "ends before it starts"),
        ({"timezone": "UTC", "hours": "Mon 09:00-09:00"}, "hours", "ends before it starts"),
        ({"timezone": "UTC", "hours": "Mon 09:00-24:30"}, "hours", "does not exist"),
        ({"timezone": "UTC", "hours": "Mon 24:00-24:00"}, "hours", "does not exist"),
        ({"timezone": "UTC", "hours": "Mon 09:60-10:00"}, "hours", "does not exist"),
        ({"timezone": "UTC", "hours": "Mon-Fri 09:00-17:00, Wed 16:00-18:00"}, "hours", "Wed overlap"),
        ({"timezone": "UTC", "hours": "Mon 09:00-10:00", "holidays": "2026-12-25"}, "holidays", "list of dates"),
        ({"timezone": "UTC", "hours": "Mon 09:00-10:00", "holidays": ["2026-13-01"]}, "holidays[0]", "ISO date"),
        ({"timezone": "UTC", "hours": "Mon 09:00-10:00", "holidays": [20261225]}, "holidays[0]", "ISO date"),
        ({"timezone": "UTC", "hours": "Mon 09:00-10:00", "holidays": ["2026-01-01"] * 1001}, "holidays", "1000"),
        ({"timezone": "UTC", "hours": "Mon 09:00-10:00", "open": True}, "open", "unknown calendar key"),
    ],
)
def test_invalid_calendars_name_the_key(data: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ValidationError) as err:
        parse_calendar("office", data)
    assert err.value.field == field and words in err.value.message


def test_the_search_for_business_time_is_bounded() -> None:
    c = cal("Mon 09:00-10:00")  # 1 h a week: ten years hold about 520 h
    with pytest.raises(ValidationError, match="not enough business time"):
        c.add(berlin(2026, 12, 7, 9, 0), 600 * H)
    with pytest.raises(ValidationError, match="not enough business time"):
        c.subtract(berlin(2026, 12, 7, 9, 0), 600 * H)
    with pytest.raises(ValidationError) as err:
        c.between(berlin(2026, 12, 7, 9, 0), berlin(2046, 12, 7, 9, 0))
    assert err.value.field == "deadline"
    assert c.max_duration() == 52 * H  # what a policy on it may count (gateway.core.policy)


def test_a_span_inside_the_skipped_hour_lasts_no_time() -> None:
    """New York skips 02:00-03:00 on 2026-03-08: a span 02:30-03:10 read with the offset before
    the change would end before it begins; it is the 10 minutes after 03:00 at most, never less
    than nothing."""
    cal = parse_calendar("c", {"timezone": "America/New_York", "hours": "Sun 02:30-03:10"})
    sunday = datetime(2026, 3, 8, 5, 0, tzinfo=UTC)  # 00:00 EST
    monday = datetime(2026, 3, 9, 5, 0, tzinfo=UTC)
    assert timedelta(0) <= cal.between(sunday, monday) <= timedelta(minutes=40)
