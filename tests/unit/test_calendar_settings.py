"""`[calendars.NAME]` and a policy's `calendar`, from the file and the environment."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import pytest

from gateway.config import effective_config, load_settings
from gateway.core.errors import ConfigError

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
