"""The scheduler driven by a FakeClock through `tick(now)`, on a real SQLite file."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from gateway.config import Settings
from gateway.core.errors import IdempotencyConflict
from gateway.core.models import Approval, OutboxKind, Outcome, Status
from gateway.core.policy import parse_policy
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.service.commands import Authority
from gateway.testing import FakeClock

POLICIES = {
    "payments": {"timeout": "1h", "on_timeout": "reject"},
    "publish": {"timeout": "30m", "on_timeout": "approve", "remind": ["10m", "5m"]},
    "boss": {
        "timeout": "10m",
        "on_timeout": "escalate",
        "escalate_to": ["web"],
        "escalation_timeout": "20m",
        "after_escalation": "approve",
    },
}


@pytest.fixture
def sla_settings(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory(workers={"agent": {"command": ["true"]}}, policies=POLICIES)


@pytest.fixture
async def rt(sla_settings: Settings, clock: FakeClock) -> AsyncIterator[Runtime]:
    runtime = Runtime(sla_settings, clock=clock, owner="t1")
    await runtime.start(background=False)
    yield runtime
    await runtime.stop()


async def suspend(rt: Runtime, policy: str, n: int = 0, **over: Any) -> Approval:
    req = SuspendRequest(run_id=f"run-{n}", step="pay", title="Pay", policy=policy, worker="agent", **over)
    approval, _ = await rt.service.suspend(req)
    return approval


async def started(rt: Runtime) -> None:
    """Wait for the start-up tick of a background scheduler."""
    for _ in range(250):
        if rt.scheduler.last_report is not None:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the scheduler did not tick at start")


async def kinds(rt: Runtime, approval_id: str) -> list[str]:
    return [e.kind for e in await rt.store.list_events(approval_id)]


async def test_timeout_fires_once_with_policy_decision(rt: Runtime, clock: FakeClock) -> None:
    a = await suspend(rt, "payments")
    assert (await rt.scheduler.tick(clock.now() + timedelta(minutes=59))).total == 0
    report = await rt.scheduler.tick(clock.advance(hours=1))
    assert report.applied == {"timed_out": 1} and report.next_wake is None
    got = await rt.service.get(a.id)
    assert got.status is Status.TIMED_OUT and got.wake_at is None
    assert got.decision is not None and got.decision.decided_by == "policy" and got.decision.outcome is Outcome.REJECT
    assert got.decision.reason == "policy 'payments': no decision after 1 h"
    assert (await rt.scheduler.tick(clock.advance(hours=5))).total == 0
    assert (await kinds(rt, a.id)).count("timed_out") == 1
    job = await rt.store.get_job(a.id)
    assert job is not None and job.worker == "agent"
    assert [o.kind for o in await rt.store.list_outbox(a.id)] == [OutboxKind.POST, OutboxKind.SYNC]


async def test_reminders_fire_once_each_even_across_restarts(
    rt: Runtime, sla_settings: Settings, clock: FakeClock
) -> None:
    a = await suspend(rt, "publish")
    start = clock.now()
    assert (await rt.scheduler.tick(start + timedelta(minutes=20))).applied == {"reminded": 1}
    assert (await rt.scheduler.tick(start + timedelta(minutes=21))).total == 0
    other = Runtime(sla_settings, clock=clock, owner="t2")  # a restarted process on the same file
    await other.start(background=False)
    try:
        assert (await other.scheduler.tick(start + timedelta(minutes=22))).total == 0
        assert (await other.scheduler.tick(start + timedelta(minutes=25))).applied == {"reminded": 1}
    finally:
        await other.stop()
    reminds = [o for o in await rt.store.list_outbox(a.id) if o.kind is OutboxKind.REMIND]
    assert [(o.channel, o.data["number"]) for o in reminds] == [("web", 1), ("web", 2)]
    await rt.outbox.drain()
    assert (await kinds(rt, a.id)).count("reminder_sent") == 2
    got = await rt.service.get(a.id)
    assert got.reminders_sent == 2 and got.wake_at == got.deadline


async def test_escalation_syncs_cards_then_decides_after_escalation(rt: Runtime, clock: FakeClock) -> None:
    a = await suspend(rt, "boss")
    report = await rt.scheduler.tick(clock.advance(minutes=10))
    assert report.applied == {"escalated": 1}
    e = await rt.service.get(a.id)
    assert e.status is Status.WAITING and e.escalations == 1
    assert e.deadline == clock.now() + timedelta(minutes=20) == e.wake_at
    assert [o.kind for o in await rt.store.list_outbox(a.id)] == [OutboxKind.POST, OutboxKind.SYNC]
    assert (await rt.scheduler.tick(clock.advance(minutes=19))).total == 0
    assert (await rt.scheduler.tick(clock.advance(minutes=1))).applied == {"timed_out": 1}
    final = await rt.service.get(a.id)
    assert final.decision is not None and final.decision.outcome is Outcome.APPROVE
    assert "after escalation" in (final.decision.reason or "")
    assert await kinds(rt, a.id) == ["suspended", "card_posted", "escalated", "timed_out", "job_queued"]


@pytest.mark.subprocess
async def test_deadlines_passed_while_down_fire_at_start(sla_settings: Settings, clock: FakeClock) -> None:
    first = Runtime(sla_settings, clock=clock, owner="before")
    await first.start(background=False)
    ids = [(await suspend(first, "payments", n)).id for n in range(3)]
    await first.stop()
    clock.advance(hours=2)  # down while the deadlines pass
    second = Runtime(sla_settings, clock=clock, owner="after")
    await second.start(background=True)  # APScheduler arms a wake-up now at start
    try:
        await started(second)
        assert second.scheduler.last_report is not None
        assert second.scheduler.last_report.applied == {"timed_out": 3}
        for approval_id in ids:
            assert (await second.service.get(approval_id)).status is Status.TIMED_OUT
        assert len(second.scheduler.jobs()) == 1  # the poll only: nothing left to wake for
    finally:
        await second.stop()


async def test_only_the_next_wake_up_is_armed(sla_settings: Settings, clock: FakeClock) -> None:
    rt = Runtime(sla_settings, clock=clock, owner="arm")
    await rt.start(background=True)
    try:
        await started(rt)
        late = await suspend(rt, "payments", 1)
        assert rt.scheduler.armed_at == late.deadline
        soon = await suspend(rt, "publish", 2)
        assert rt.scheduler.armed_at == soon.wake_at == clock.now() + timedelta(minutes=20)
        for n in range(3, 50):
            await suspend(rt, "payments", n)
        assert rt.scheduler.armed_at == soon.wake_at
        assert sorted(j.id for j in rt.scheduler.jobs()) == ["hitl-sla-poll", "hitl-sla-wake"]
    finally:
        await rt.stop()


@pytest.mark.parametrize("human_first", [True, False])
async def test_human_decision_and_deadline_race_give_one_outcome(
    rt: Runtime, clock: FakeClock, human_first: bool
) -> None:
    outcomes = set()
    for n in range(15):
        a = await suspend(rt, "payments", n)
        at = a.deadline
        assert at is not None
        clock.set(at)

        async def human(approval_id: str = a.id) -> str:
            try:
                return (
                    await rt.service.decide(approval_id, Outcome.APPROVE, "web:alice", authority=Authority.OPERATOR)
                ).status.value
            except Exception as exc:  # AlreadyDecided when the deadline won
                return type(exc).__name__

        calls = [human(), rt.scheduler.tick(at)]
        await asyncio.gather(*(calls if human_first else calls[::-1]))
        got = await rt.service.get(a.id)
        finals = [k for k in await kinds(rt, a.id) if k in ("approved", "timed_out")]
        assert len(finals) == 1 and finals[0] == ("approved" if got.status is Status.APPROVED else "timed_out")
        assert len([j for j in await rt.store.list_jobs(limit=1000) if j.approval_id == a.id]) == 1
        outcomes.add(got.status)
    assert outcomes <= {Status.APPROVED, Status.TIMED_OUT}


async def test_two_schedulers_racing_apply_each_timeout_once(
    rt: Runtime, sla_settings: Settings, clock: FakeClock
) -> None:
    ids = [(await suspend(rt, "payments" if n % 2 else "publish", n)).id for n in range(120)]
    other = Runtime(sla_settings, clock=clock, owner="t2")
    await other.start(background=False)
    try:
        rt.scheduler.batch = other.scheduler.batch = 16
        reports = await asyncio.gather(
            rt.scheduler.tick(clock.now() + timedelta(minutes=20)),
            other.scheduler.tick(clock.now() + timedelta(minutes=20)),
        )
        assert sum(r.applied["reminded"] for r in reports) == 60
        at = clock.now() + timedelta(hours=1)
        reports = await asyncio.gather(rt.scheduler.tick(at), other.scheduler.tick(at))
    finally:
        await other.stop()
    assert sum(r.applied["timed_out"] for r in reports) == 120
    assert sum(r.errors for r in reports) == 0
    for approval_id in ids:
        events = await kinds(rt, approval_id)
        assert events.count("timed_out") == 1
        assert events.count("reminded") <= 1
    assert len(await rt.store.list_jobs(limit=1000)) == 120


async def test_a_scheduler_that_stalls_past_its_lease_loses_the_cas(rt: Runtime, clock: FakeClock) -> None:
    """Leases split the work; the compare-and-set is what keeps it exactly once when a lease
    runs out under a stalled scheduler and another one takes the rows over."""
    ids = [(await suspend(rt, "publish", n)).id for n in range(5)]
    at = clock.now() + timedelta(hours=2)
    stale = await rt.store.claim_due(at, "stalled", timedelta(seconds=60), 100)
    assert sorted(a.id for a in stale) == sorted(ids)
    assert (await rt.scheduler.tick(at)).applied.get("timed_out", 0) == 0  # leased: skipped
    later = at + timedelta(seconds=61)
    assert (await rt.scheduler.tick(later)).applied["timed_out"] == 5  # the lease ran out
    results = await rt.service.apply_due_many(stale, later)  # the stalled one wakes up
    assert results == [None] * 5
    for approval_id in ids:
        assert (await kinds(rt, approval_id)).count("timed_out") == 1


async def test_a_stale_wake_up_is_repaired_not_spun_on(rt: Runtime, clock: FakeClock) -> None:
    a = await suspend(rt, "payments")
    broken = a.evolve(wake_at=clock.now(), version=a.version + 1)  # as if written by older code
    assert await rt.store.save_transition(broken, a.version, [])
    report = await rt.scheduler.tick(clock.now())
    assert report.applied == {"rescheduled": 1}
    assert (await rt.service.get(a.id)).wake_at == a.deadline


async def test_the_armed_wake_up_fires_on_time_in_real_time(settings_factory: Callable[..., Settings]) -> None:
    """With the real clock and a 60 s safety poll, only the date job armed by the suspend's
    wake hook can time this 300 ms approval out within the test."""
    settings = settings_factory(scheduler={"poll_interval": "60s"})
    rt = Runtime(settings, owner="real")
    await rt.start(background=True)
    try:
        await started(rt)
        req = SuspendRequest(run_id="r", step="s", title="t", policy=parse_policy({"timeout": "300ms"}))
        a, _ = await rt.service.suspend(req)
        assert rt.scheduler.armed_at == a.deadline
        for _ in range(150):
            if (await rt.service.get(a.id)).status is Status.TIMED_OUT:
                break
            await asyncio.sleep(0.02)
        got = await rt.service.get(a.id)
        assert got.status is Status.TIMED_OUT and got.decision is not None
        assert got.decision.decided_at >= a.deadline
    finally:
        await rt.stop()


async def test_stop_never_hangs_on_a_stuck_loop(rt: Runtime, caplog: pytest.LogCaptureFixture) -> None:
    """A background loop that ignores cancellation is logged with its stack and abandoned."""
    import gateway.runtime as runtime_module

    refuse = True

    async def stubborn() -> None:
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if not refuse:
                    raise
                continue  # refuses to stop

    task = asyncio.create_task(stubborn(), name="stubborn-loop")
    await asyncio.sleep(0)  # let it start (a task cancelled before it runs just ends)
    rt._tasks.append(task)
    old, runtime_module.STOP_TIMEOUT = runtime_module.STOP_TIMEOUT, 0.2
    try:
        await rt.stop()
    finally:
        runtime_module.STOP_TIMEOUT = old
        refuse = False
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert "stubborn-loop did not stop" in caplog.text and "stubborn" in caplog.text


async def test_a_replay_after_an_escalation_is_compared_with_what_was_first_asked(
    rt: Runtime, clock: FakeClock
) -> None:
    a = await suspend(rt, "boss", channels=("web",))
    assert (await rt.scheduler.tick(clock.advance(minutes=10))).applied == {"escalated": 1}
    req = SuspendRequest(run_id="run-0", step="pay", title="Pay", policy="boss", worker="agent", channels=("web",))
    again, created = await rt.service.suspend(req)
    assert again.id == a.id and not created
    with pytest.raises(IdempotencyConflict) as refused:
        await rt.service.suspend(replace(req, title="Pay more"))
    assert refused.value.details == {"field": "title"}
