"""A policy with `calendar`: its deadline, reminders, escalation, extensions and an agent's deadline
count business time (pure: no clock, no database)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from gateway.core import extend as extend_rules
from gateway.core import policy as rules
from gateway.core.calendar import Calendar, parse_calendar
from gateway.core.deadlines import business_deadline, shown_deadline
from gateway.core.errors import PolicyNotAllowed, ValidationError
from gateway.core.models import Policy
from gateway.core.policy_bounds import AgentBounds, choose
from gateway.testing import make_approval

BERLIN = ZoneInfo("Europe/Berlin")
OFFICE = parse_calendar("office", {"timezone": "Europe/Berlin", "hours": "Mon-Fri 09:00-18:00"})
FRIDAY_5PM = datetime(2026, 12, 4, 17, 0, tzinfo=BERLIN)
H = timedelta(hours=1)


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 12, day, hour, minute, tzinfo=BERLIN)


def parse(calendars: dict[str, Calendar] | None = None, **fields: Any) -> Policy:
    return rules.parse_policy(fields, name="p", calendars={"office": OFFICE} if calendars is None else calendars)


def test_deadline_and_reminders_count_business_time() -> None:
    policy = parse(timeout="4h", remind=["1h", "3h30m"], calendar="office")
    a = make_approval(policy, FRIDAY_5PM)
    assert a.deadline == at(7, 12)
    assert rules.reminder_times(a) == [at(4, 17, 30), at(7, 11)]
    assert a.wake_at == at(4, 17, 30)
    view = rules.reminders_view(a)
    assert [r["before_deadline"] for r in view] == ["3h30m", "1h"]
    assert rules.due_action(a, at(6, 23)) is rules.DueAction.REMIND  # the Friday one is late, not lost
    reminded = rules.remind(a, at(4, 17, 30)).approval
    assert rules.next_wake(reminded) == at(7, 11)
    assert rules.due_action(reminded, at(7, 10, 59)) is None
    assert rules.due_action(reminded, at(7, 12)) is rules.DueAction.TIMEOUT


def test_escalation_waits_business_time_from_the_timeout() -> None:
    policy = parse(timeout="4h", on_timeout="escalate", escalate_to=["web"], escalation_timeout="2h", calendar="office")
    a = make_approval(policy, FRIDAY_5PM)
    escalated = rules.time_out(a, at(7, 17)).approval  # Monday 17:00, late by five hours
    assert escalated.deadline == at(8, 10)
    assert rules.period_start(escalated) == at(7, 17)
    assert rules.time_out(escalated, at(8, 10)).final


def test_an_extension_adds_business_time() -> None:
    policy = parse(timeout="4h", extend=["8h"], calendar="office")
    a = make_approval(policy, FRIDAY_5PM)
    moved = extend_rules.extend(a, 8 * H, "web:alice", at(7, 11)).approval
    assert moved.deadline == at(8, 11)


def test_an_agent_deadline_is_the_business_time_until_it() -> None:
    base = parse(timeout="1h", calendar="office")
    bounds = AgentBounds(frozenset({"timeout"}), max_timeout=timedelta(hours=8))
    now = FRIDAY_5PM.astimezone(BERLIN)
    chosen = choose(base, bounds, {}, at(7, 12), now)
    assert chosen.timeout == 4 * H and chosen.calendar == OFFICE
    assert rules.deadline_for(chosen, now) == at(7, 12)
    sunday = choose(base, bounds, {}, at(6, 12), now)  # outside the hours: the business time before it
    assert sunday.timeout == H and rules.deadline_for(sunday, now) == at(4, 18)
    with pytest.raises(ValidationError) as err:
        choose(base, bounds, {}, at(6, 12), at(5, 10))  # Saturday to Sunday: no business time
    assert err.value.field == "deadline" and "no business time" in err.value.message
    with pytest.raises(PolicyNotAllowed) as refused:
        choose(base, bounds, {}, at(10, 12), now)  # 4 business days > max_timeout 8h
    assert refused.value.field == "deadline"
    with pytest.raises(PolicyNotAllowed) as refused:
        choose(base, bounds, {"calendar": "other"}, None, now)  # the operator's hours, not the agent's
    assert refused.value.field == "policy.calendar"


def test_unknown_calendar_and_too_long_durations_are_named() -> None:
    with pytest.raises(ValidationError) as err:
        parse(calendar="nope")
    assert err.value.field == "calendar" and "unknown calendar 'nope'" in err.value.message
    with pytest.raises(ValidationError) as err:
        parse(calendars={}, calendar="office")
    assert "none configured" in err.value.message
    with pytest.raises(ValidationError) as err:
        parse(calendar=["office"])
    assert err.value.field == "calendar" and "must name a configured calendar" in err.value.message
    most = OFFICE.max_duration()  # 52 weeks of 45 h
    assert most == 2340 * H
    parse(timeout="2340h", calendar="office")
    for key, value in (("timeout", "2341h"), ("escalation_timeout", "2341h"), ("extend", ["1h", "2341h"])):
        fields: dict[str, Any] = {"timeout": "1h", "calendar": "office", key: value}
        if key == "escalation_timeout":
            fields |= {"on_timeout": "escalate", "escalate_to": ["web"]}
        with pytest.raises(ValidationError) as err:
            parse(**fields)
        assert err.value.field.startswith(key) and "one year of its hours" in err.value.message


def test_the_policy_keeps_its_calendar_when_stored() -> None:
    policy = parse(timeout="4h", calendar="office")
    data = policy.to_json()
    assert data["calendar"] == OFFICE.to_json()
    assert Policy.from_json(data) == policy
    assert "calendar" not in Policy().to_json()  # older policies are stored byte for byte as before


def test_cards_show_the_deadline_in_the_calendar_zone() -> None:
    a = make_approval(parse(timeout="4h", calendar="office"), FRIDAY_5PM)
    assert shown_deadline(a) == "Mon 2026-12-07 12:00 CET" == business_deadline(a)
    plain = make_approval(Policy(timeout=4 * H), FRIDAY_5PM)
    assert shown_deadline(plain) == "2026-12-04 20:00 UTC" and business_deadline(plain) is None
    never = make_approval(Policy(timeout=None), FRIDAY_5PM)
    assert shown_deadline(never) == "" and business_deadline(never) is None
