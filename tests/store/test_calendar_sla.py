"""Business-hours SLAs end to end: suspend, the scheduler's `tick(now)` and a restart, on a SQLite
file and on PostgreSQL (HITL_TEST_POSTGRES_URL), with an injected clock."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from gateway.config import Settings
from gateway.core.models import Approval, OutboxKind, Outcome, Status
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.service.commands import Authority
from gateway.testing import FakeClock

BERLIN = ZoneInfo("Europe/Berlin")
CALENDARS = {
    "office": {"timezone": "Europe/Berlin", "hours": "Mon-Fri 09:00-18:00", "holidays": ["2026-12-25"]},
}
POLICIES: dict[str, dict[str, Any]] = {
    "office": {"timeout": "4h", "calendar": "office", "remind": ["1h"], "extend": ["8h"]},
    "boss": {
        "timeout": "4h",
        "calendar": "office",
        "on_timeout": "escalate",
        "escalate_to": ["web"],
        "escalation_timeout": "2h",
        "after_escalation": "approve",
    },
    "chosen": {"timeout": "1h", "calendar": "office", "agent_may_set": ["timeout"], "max_timeout": "8h"},
}


def local(month: int, day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, month, day, hour, minute, tzinfo=BERLIN)


FRIDAY_5PM = local(12, 4, 17)


@pytest.fixture
def cal_settings(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory(workers={"agent": {"command": ["true"]}}, policies=POLICIES, calendars=CALENDARS)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(FRIDAY_5PM)


@pytest.fixture
async def rt(cal_settings: Settings, clock: FakeClock) -> AsyncIterator[Runtime]:
    runtime = Runtime(cal_settings, clock=clock, owner="t1")
    await runtime.start(background=False)
    yield runtime
    await runtime.stop()


async def suspend(rt: Runtime, policy: Any, n: int = 0, **over: Any) -> Approval:
    req = SuspendRequest(run_id=f"run-{n}", step="pay", title="Pay", policy=policy, worker="agent", **over)
    approval, _ = await rt.service.suspend(req)
    return approval


async def kinds(rt: Runtime, approval_id: str) -> list[str]:
    return [e.kind for e in await rt.store.list_events(approval_id)]


async def test_a_friday_evening_sla_waits_over_the_weekend(rt: Runtime, cal_settings: Settings) -> None:
    a = await suspend(rt, "office")
    assert a.deadline == local(12, 7, 12) and a.wake_at == local(12, 7, 11)
    for quiet in (local(12, 4, 21), local(12, 4, 23, 59), local(12, 5, 12), local(12, 6, 23), local(12, 7, 10, 59)):
        assert (await rt.scheduler.tick(quiet)).total == 0, quiet
    assert (await rt.scheduler.tick(local(12, 7, 11))).applied == {"reminded": 1}
    other = Runtime(cal_settings, clock=FakeClock(local(12, 7, 11, 30)), owner="t2")  # a restarted process
    await other.start(background=False)
    try:
        stored = await other.service.get(a.id)
        assert stored.policy.calendar is not None and stored.policy.calendar.name == "office"
        assert (await other.scheduler.tick(local(12, 7, 11, 59))).total == 0
        report = await other.scheduler.tick(local(12, 7, 12))
        assert report.applied == {"timed_out": 1}
    finally:
        await other.stop()
    got = await rt.service.get(a.id)
    assert got.status is Status.TIMED_OUT and got.decision is not None and got.decision.outcome is Outcome.REJECT
    assert got.decision.reason == "policy 'office': no decision after 4 h of office business hours"
    assert (await kinds(rt, a.id)).count("timed_out") == 1
    reminds = [o for o in await rt.store.list_outbox(a.id) if o.kind is OutboxKind.REMIND]
    assert [o.data["number"] for o in reminds] == [1]


async def test_a_holiday_and_an_extension(rt: Runtime, clock: FakeClock) -> None:
    clock.set(local(12, 24, 17))  # Thursday; Friday the 25th is a holiday
    a = await suspend(rt, "office", n=1)
    assert a.deadline == local(12, 28, 12)
    assert (await rt.scheduler.tick(local(12, 25, 17))).total == 0
    clock.set(local(12, 28, 10))
    moved = await rt.service.extend(a.id, timedelta(hours=8), "operator:test", authority=Authority.OPERATOR)
    assert moved.deadline == local(12, 29, 11)
    assert (await rt.scheduler.tick(local(12, 28, 12))).applied.get("timed_out") is None
    assert (await rt.scheduler.tick(local(12, 29, 11))).applied == {"timed_out": 1}


async def test_escalation_counts_business_time_too(rt: Runtime) -> None:
    a = await suspend(rt, "boss", n=2)
    assert (await rt.scheduler.tick(local(12, 5, 17))).total == 0
    assert (await rt.scheduler.tick(local(12, 7, 12))).applied == {"escalated": 1}
    e = await rt.service.get(a.id)
    assert e.escalations == 1 and e.deadline == local(12, 7, 14) == e.wake_at
    assert (await rt.scheduler.tick(local(12, 7, 13, 59))).total == 0
    assert (await rt.scheduler.tick(local(12, 7, 14))).applied == {"timed_out": 1}
    final = await rt.service.get(a.id)
    assert final.decision is not None and final.decision.outcome is Outcome.APPROVE


async def test_an_agent_deadline_and_timeout_count_business_time(rt: Runtime) -> None:
    by_deadline = await suspend(rt, "chosen", n=3, deadline=local(12, 7, 12))
    assert by_deadline.policy.timeout == timedelta(hours=4) and by_deadline.deadline == local(12, 7, 12)
    by_timeout = await suspend(rt, {"name": "chosen", "timeout": "3h"}, n=4)
    assert by_timeout.deadline == local(12, 7, 11)
    again = await suspend(rt, "chosen", n=3, deadline=local(12, 7, 12))  # a retry: the same approval
    assert again.id == by_deadline.id
