"""`[calendars.NAME]` and a policy's `calendar`, from the file and the environment."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from gateway.config import effective_config, load_settings
from gateway.core.errors import ConfigError, ValidationError
from gateway.core.models import Policy
from gateway.service.policies import resolve_policy

GOOD = """
[security]
secret_keys = ["secret-0123456789abcdef"]

[calendars.office]
timezone = "Europe/Berlin"
hours = "Mon-Thu 09:00-17:00, Fri 09:00-13:00"
holidays = [2026-12-25, "2026-12-26"]

[policies.payments]
timeout = "4h"
remind = ["1h"]
calendar = "office"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hitl-gateway.toml"
    path.write_text(text)
    return path


def test_a_policy_names_its_calendar(tmp_path: Path) -> None:
    s = load_settings(write(tmp_path, GOOD), env={})
    office = s.calendars["office"]
    assert office.timezone == "Europe/Berlin" and office.holidays == (date(2026, 12, 25), date(2026, 12, 26))
    pay = s.policies["payments"]
    assert pay.calendar == office and pay.timeout == timedelta(hours=4)
    assert s.policies["default"].calendar is None
    shown = effective_config(s)
    assert shown["calendars"]["office"]["hours"] == "Mon-Thu 09:00-17:00, Fri 09:00-13:00"
    assert shown["policies"]["payments"]["calendar"]["name"] == "office"


def test_calendars_from_the_environment(tmp_path: Path) -> None:
    env = {
        "HITL_CALENDARS_SUPPORT_TIMEZONE": "America/New_York",
        "HITL_CALENDARS_SUPPORT_HOURS": "Mon-Fri 08:00-20:00",
        "HITL_CALENDARS_SUPPORT_HOLIDAYS": "2026-11-26,2026-12-25",
        "HITL_POLICIES_PAYMENTS_CALENDAR": "support",
    }
    s = load_settings(write(tmp_path, GOOD), env=env)
    support = s.calendars["support"]
    assert support.holidays == (date(2026, 11, 26), date(2026, 12, 25))
    assert s.policies["payments"].calendar == support


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ('timezone = "Europe/Berlin"', 'timezone = "Europe/Nowhere"', "calendars.office.timezone"),
        ('timezone = "Europe/Berlin"', "timezone = 1", "calendars.office.timezone"),
        ('hours = "Mon-Thu 09:00-17:00, Fri 09:00-13:00"', 'hours = "Mon-Thu 17:00-09:00"', "calendars.office.hours"),
        ('hours = "Mon-Thu 09:00-17:00, Fri 09:00-13:00"', 'hours = "Mo-Fr 09:00-17:00"', "calendars.office.hours"),
        ('hours = "Mon-Thu 09:00-17:00, Fri 09:00-13:00"', 'hours = ""', "calendars.office.hours"),
        ('holidays = [2026-12-25, "2026-12-26"]', 'holidays = ["Christmas"]', "calendars.office.holidays[0]"),
        ('holidays = [2026-12-25, "2026-12-26"]', 'name = "x"', "calendars.office.name"),
        ('calendar = "office"', 'calendar = "ofice"', "policies.payments.calendar"),
        ('timeout = "4h"', 'timeout = "1900h"', "policies.payments.timeout"),  # > 52 weeks of 36 h
    ],
)
def test_bad_calendars_name_the_key(tmp_path: Path, old: str, new: str, key: str) -> None:
    assert old in GOOD
    with pytest.raises(ConfigError) as err:
        load_settings(write(tmp_path, GOOD.replace(old, new)), env={})
    assert err.value.key == key


def test_a_calendar_must_be_a_table(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(
            write(tmp_path, GOOD.replace("[calendars.office]", '[calendars]\nshop = "Mon-Fri"\n[calendars.office]')),
            env={},
        )
    assert err.value.key == "calendars.shop"


def test_an_inline_policy_with_a_deadline_counts_business_time(tmp_path: Path) -> None:
    s = load_settings(write(tmp_path, GOOD), env={})
    berlin = ZoneInfo("Europe/Berlin")
    friday, monday = datetime(2026, 12, 4, 12, 0, tzinfo=berlin), datetime(2026, 12, 7, 12, 0, tzinfo=berlin)
    inline = resolve_policy(s, {"calendar": "office", "on_timeout": "reject"}, deadline=monday, now=friday)
    assert inline.calendar == s.calendars["office"] and inline.timeout == timedelta(hours=4)  # Friday ends at 13:00
    built = resolve_policy(s, Policy(calendar=s.calendars["office"]), deadline=monday, now=friday)
    assert built.timeout == timedelta(hours=4)
    saturday, sunday = datetime(2026, 12, 5, 9, 0, tzinfo=berlin), datetime(2026, 12, 6, 17, 0, tzinfo=berlin)
    for value in ({"calendar": "office"}, Policy(calendar=s.calendars["office"])):
        with pytest.raises(ValidationError) as err:
            resolve_policy(s, value, deadline=sunday, now=saturday)
        assert err.value.field == "deadline" and "no business time" in err.value.message
