"""The signed trail covers the present (both backends): with a signing key, an event older than
`checkpoint_every` + SEALER_GRACE that no checkpoint seals, with no checkpoint after it, is a
break, so deleting every checkpoint fails verification within minutes. A gateway that seals on
schedule, one in a timeout storm, and one stopped for a week then started, never trip it; without
a key the old 'not yet proven' stays."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gateway.config import Settings
from gateway.core.audit_check import SEAL_GRACE, SEALER_GRACE
from gateway.core.models import NewEvent, Outcome
from gateway.runtime import Runtime
from gateway.service.approvals import SuspendRequest
from gateway.service.commands import Authority
from gateway.testing import FakeClock
from tests.audit.conftest import Raw

EVERY = 60.0  # checkpoint_every's default
LATER = EVERY + SEALER_GRACE + 60  # past the new rule, well within the old every + SEAL_GRACE
DAY = 86400.0


async def _two(rt: Runtime, clock: FakeClock) -> tuple[str, str]:
    """Two decided approvals: the first rejected, the second approved."""
    ids = []
    for run in ("refund", "charge"):
        req = SuspendRequest(run_id=run, step="pay", title=f"{run} 900 EUR", args={"amount": 900}, worker="agent")
        ids.append((await rt.service.suspend(req))[0].id)
        clock.advance(1)
    await rt.service.decide(ids[0], Outcome.REJECT, "operator:alice", authority=Authority.OPERATOR, comment="no")
    await rt.service.decide(ids[1], Outcome.APPROVE, "operator:alice", authority=Authority.OPERATOR)
    await rt.worker.drain()
    return ids[0], ids[1]


async def _flip(raw: Raw, victim: str) -> None:
    """The issue's attack: every checkpoint gone, the rejection turned into an approval in the
    events (rechained) and in the row, so that nothing but the missing seal tells."""
    await raw.drop_triggers()
    await raw.run("DELETE FROM audit_leaves")
    await raw.run("DELETE FROM audit_checkpoints")
    await raw.run("UPDATE events SET kind = 'approved' WHERE approval_id = $1 AND kind = 'rejected'", victim)
    await raw.rechain(victim)
    await raw.run(
        "UPDATE approvals SET status = 'approved', decision = replace(decision, '\"reject\"', '\"approve\"')"
        " WHERE id = $1",
        victim,
    )


@pytest.mark.subprocess
async def test_deleted_checkpoints_and_a_flipped_decision_are_a_break(
    runtime: Runtime, clock: FakeClock, raw: Raw
) -> None:
    rejected, _ = await _two(runtime, clock)
    await runtime.audit.seal()
    await _flip(raw, rejected)
    clock.advance(LATER)  # minutes, not the quarter of an hour the old rule waited
    assert LATER < EVERY + SEAL_GRACE
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and problem.seq == 1 and problem.found.startswith("not sealed, dated ")
    assert "and no checkpoint since: checkpoints deleted" in problem.found and "(event id " in problem.found
    assert problem.expected == "sealed by a checkpoint (a running gateway seals within 60 s + 300 s)"


@pytest.mark.subprocess
async def test_deleted_newer_checkpoints_are_a_break_too(runtime: Runtime, clock: FakeClock, raw: Raw) -> None:
    """Only the checkpoints after the rewritten events deleted: an older one stays, dated
    before them, and the gateway was not restarted to re-seal them."""
    await _two(runtime, clock)
    await runtime.audit.seal()
    clock.advance(600)
    later = SuspendRequest(run_id="later", step="pay", title="later", args={"amount": 1}, worker="agent")
    victim = (await runtime.service.suspend(later))[0].id
    await runtime.service.decide(victim, Outcome.REJECT, "operator:alice", authority=Authority.OPERATOR)
    newest = await runtime.audit.seal()
    await raw.drop_triggers()
    await raw.run("DELETE FROM audit_leaves WHERE checkpoint = $1", newest.seq)
    await raw.run("DELETE FROM audit_checkpoints WHERE seq = $1", newest.seq)
    await raw.run(
        "UPDATE events SET actor = 'operator:mallory', data = replace(data, 'operator:alice', 'operator:mallory')"
        " WHERE approval_id = $1 AND kind = 'rejected'",
        victim,
    )
    await raw.rechain(victim)
    await raw.run(
        "UPDATE approvals SET decision = replace(decision, 'operator:alice', 'operator:mallory') WHERE id = $1", victim
    )
    clock.advance(LATER)
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and (problem.approval_id, problem.seq) == (victim, 1), problem
    assert "and no checkpoint since" in problem.found


async def test_a_gateway_sealing_on_schedule_never_trips_it(runtime: Runtime, clock: FakeClock) -> None:
    """Decisions every 20 s for ten minutes, the timer sealing every minute, verify at every
    step: just before the timer's round too, and right after a long idle spell."""
    for i in range(30):
        req = SuspendRequest(run_id=f"r{i}", step="pay", title="pay", args={"i": i}, worker="agent")
        approval, _ = await runtime.service.suspend(req)
        await runtime.service.decide(approval.id, Outcome.APPROVE, "operator:alice", authority=Authority.OPERATOR)
        clock.advance(20)
        if i % 3 == 2:
            verdict = await runtime.audit.verify()  # the round is due now, not run yet
            assert verdict.ok, verdict.problem
            await runtime.audit.run_once()
    clock.advance(3 * DAY)  # idle: nothing moved, no checkpoint written
    req = SuspendRequest(run_id="after-idle", step="pay", title="pay", args={}, worker="agent")
    await runtime.service.suspend(req)
    clock.advance(EVERY)
    verdict = await runtime.audit.verify()
    assert verdict.ok and "not yet proven" in verdict.summary, verdict


@pytest.mark.subprocess
async def test_a_storm_dated_at_its_start_does_not_trip_it(runtime: Runtime, clock: FakeClock) -> None:
    """A timeout storm dates its events at its tick's start and commits them for minutes,
    with checkpoints in between: an event dated long ago, committed after the newest checkpoint,
    has that checkpoint after it."""
    (a, _) = await _two(runtime, clock)
    start = clock.now()
    clock.advance(300)
    await runtime.audit.run_once()  # seals the storm's first commits (here: the two approvals)
    await runtime.store.append_events([NewEvent(a, "reminded", start, None, None, {"storm": True})])
    clock.advance(EVERY + SEALER_GRACE)  # and the sealer has not come round yet
    verdict = await runtime.audit.verify()
    assert verdict.ok, verdict.problem


async def _killed(settings: Settings, clock: FakeClock) -> None:
    """A gateway that wrote and was killed before its timer sealed: no stop, no seal."""
    rt = Runtime(settings, clock=clock, owner="killed")
    await rt.start(background=False)
    await _two(rt, clock)
    await rt.stop()  # a runtime without loops (as a killed serve) leaves its events unsealed


@pytest.mark.subprocess
async def test_a_gateway_stopped_for_a_week_then_started_shows_no_break(settings: Settings, clock: FakeClock) -> None:
    """Killed with a minute unsealed; verified while stopped it is a break that says so (no
    gateway has run since: nothing can tell a deletion from it); the gateway seals at start,
    before it serves, and then nothing is missing."""
    await _killed(settings, clock)
    clock.advance(7 * DAY)
    stopped = Runtime(settings, clock=clock, owner="cli")
    await stopped.start(background=False)
    try:
        problem = (await stopped.audit.verify()).problem
        assert problem is not None and "no gateway has run since (one seals when it starts)" in problem.found
    finally:
        await stopped.stop()
    started = Runtime(settings, clock=clock, owner="serve")
    await started.start()  # background: seals before its loops, before serve would listen
    try:
        verdict = await started.audit.verify()
        assert verdict.ok and "not sealed" not in verdict.summary, verdict
    finally:
        await started.stop()


@pytest.mark.subprocess
async def test_a_gateway_stopped_on_purpose_seals_before_it_exits(settings: Settings, clock: FakeClock) -> None:
    rt = Runtime(settings, clock=clock, owner="serve")
    await rt.start()
    await _two(rt, clock)
    await rt.stop()  # SIGTERM: the loops stop, then one last checkpoint
    clock.advance(7 * DAY)
    cli = Runtime(settings, clock=clock, owner="cli")
    await cli.start(background=False)
    try:
        verdict = await cli.audit.verify()
        assert verdict.ok and "not sealed" not in verdict.summary, verdict
    finally:
        await cli.stop()


@pytest.fixture
def unsigned(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory(workers={"agent": {"command": ["true"]}})


@pytest.mark.subprocess
async def test_without_a_key_the_attack_is_only_not_yet_proven(unsigned: Settings, clock: FakeClock, raw: Raw) -> None:
    """Unsigned checkpoints prove nothing a tamperer cannot redo: no rule on them beyond the old
    one (older than checkpoint_every + SEAL_GRACE)."""
    rt = Runtime(unsigned, clock=clock, owner="test")
    await rt.start(background=False)
    try:
        rejected, _ = await _two(rt, clock)
        await rt.audit.seal()
        await _flip(raw, rejected)
        clock.advance(LATER)
        verdict = await rt.audit.verify()
        assert verdict.ok and "not yet proven" in verdict.summary, verdict.problem
    finally:
        await rt.stop()
