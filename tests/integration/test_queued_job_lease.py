"""A claimed resume job that waits for an entrypoint pool's process holds its lease the whole wait,
and is not launched once it may have lost it: another runner may have claimed (and launched) it
meanwhile, and the same step must not run twice at once. The clock is injected."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest

from gateway.core.models import JobStatus, Outcome
from gateway.jobs import worker as worker_module
from gateway.jobs.launch import AttemptOutcome, AttemptResult, Launch, Launcher
from gateway.jobs.pool import EntrypointPool
from gateway.runtime import Runtime
from gateway.service import SuspendRequest, new_id
from gateway.service.commands import Authority
from gateway.settings import WorkerSettings
from gateway.testing import FakeClock
from tests.integration.test_admission_flow import _until


@pytest.fixture
def db_url(store_url: str) -> str:
    return store_url  # SQLite and PostgreSQL: the lease is the store's


class _OneBusyProcess(EntrypointPool):
    """A pool whose one process is busy until `free` is set; `launched`, what it was given."""

    def __init__(self, cfg: WorkerSettings) -> None:
        super().__init__(cfg)
        self.free = asyncio.Event()
        self.waiting = 0
        self.launched: list[str] = []

    async def _acquire(self) -> Any:
        self.waiting += 1
        await self.free.wait()
        return _Proc()

    async def _ask(self, proc: Any, launch: Launch) -> AttemptResult:
        self.launched.append(launch.approval_id)
        return AttemptResult(AttemptOutcome.SUCCEEDED)

    async def _release(self, proc: Any, healthy: bool) -> None:
        return None


class _Proc:
    returncode = None


async def _queued_job(
    settings_factory: Callable[..., Any], clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> tuple[Runtime, list[_OneBusyProcess], str]:
    pools: list[_OneBusyProcess] = []

    def build(cfg: WorkerSettings, secret: str) -> Launcher:
        pools.append(_OneBusyProcess(cfg))
        return pools[-1]

    monkeypatch.setattr(worker_module, "build_launcher", build)
    pool = {"entrypoint": "tests.fakes.entry:handle", "pool_size": 1}
    rt = Runtime(settings_factory(workers={"pool": pool}), clock=clock, owner="holder")
    await rt.start(background=False)
    request = SuspendRequest(run_id=f"run-{new_id()}", step="s", title="t", worker="pool")
    made, _ = await rt.service.suspend(request)
    await rt.service.decide(made.id, Outcome.APPROVE, "operator:ops", authority=Authority.OPERATOR)
    return rt, pools, made.id


async def test_a_job_whose_lease_ran_out_while_it_queued_is_not_launched(
    settings_factory: Callable[..., Any], clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, pools, approval_id = await _queued_job(settings_factory, clock, monkeypatch)
    try:
        attempt = asyncio.create_task(rt.worker.run_once())
        await _until(lambda: bool(pools) and pools[0].waiting == 1)  # claimed, waiting for the process
        clock.advance((rt.worker.lease + timedelta(seconds=1)).total_seconds())  # no renewal came through
        stolen = await rt.store.claim_launches(clock.now(), "thief", rt.worker.lease, 10)
        assert [c.job.approval_id for c in stolen] == [approval_id]  # the thief launches it now
        pools[0].free.set()
        assert await asyncio.wait_for(attempt, 5) == 1
        assert pools[0].launched == []  # not a second launch beside the thief's
        job = await rt.store.get_job(approval_id)
        assert job is not None and job.status is JobStatus.RUNNING and job.claimed_by == "thief"
    finally:
        await rt.stop()


async def test_a_queued_job_whose_lease_expired_unclaimed_is_launched(
    settings_factory: Callable[..., Any], clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its lease ran out but nobody took it: renewed at launch, it runs (once)."""
    rt, pools, approval_id = await _queued_job(settings_factory, clock, monkeypatch)
    try:
        attempt = asyncio.create_task(rt.worker.run_once())
        await _until(lambda: bool(pools) and pools[0].waiting == 1)
        clock.advance((rt.worker.lease + timedelta(seconds=1)).total_seconds())
        pools[0].free.set()
        assert await asyncio.wait_for(attempt, 5) == 1
        assert pools[0].launched == [approval_id]
        job = await rt.store.get_job(approval_id)
        assert job is not None and job.status is JobStatus.SUCCEEDED and job.attempts == 1
    finally:
        await rt.stop()


async def test_a_failed_lease_renewal_does_not_end_the_renewals(
    settings_factory: Callable[..., Any], clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One store error while renewing (a dropped connection): the next renewal still comes, so the
    lease does not run out under a job that waits for a pool process (or runs long)."""
    rt, pools, approval_id = await _queued_job(settings_factory, clock, monkeypatch)
    rt.worker.lease = timedelta(seconds=0.3)  # renewed every 0.1 s of the event loop's time
    extend = rt.worker.jobs.extend_lease
    calls: list[datetime] = []

    async def flaky(job_id: int, owner: str, until: datetime, *, claim: int) -> bool:
        calls.append(until)
        if len(calls) == 1:
            raise ConnectionResetError("the store's connection dropped")
        return await extend(job_id, owner, until, claim=claim)

    monkeypatch.setattr(rt.worker.jobs, "extend_lease", flaky)
    try:
        attempt = asyncio.create_task(rt.worker.run_once())
        await _until(lambda: len(calls) >= 2)
        pools[0].free.set()
        assert await asyncio.wait_for(attempt, 5) == 1
        assert pools[0].launched == [approval_id]
    finally:
        await rt.stop()


async def test_a_stopping_worker_launches_no_queued_job_and_hands_it_back(
    settings_factory: Callable[..., Any], clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped while a job waits for a pool process: a process freed within the grace period does
    not start it (it would be cut at the deadline, mid-step); it is handed back, due as it was."""
    rt, pools, approval_id = await _queued_job(settings_factory, clock, monkeypatch)
    loop = asyncio.create_task(rt.worker.run_forever())
    try:
        await _until(lambda: bool(pools) and pools[0].waiting == 1)
        rt.worker.stop(asyncio.get_running_loop().time() + 5)
        pools[0].free.set()
        await asyncio.wait_for(loop, 5)
        assert pools[0].launched == []
        job = await rt.store.get_job(approval_id)
        assert job is not None and job.status is JobStatus.RUNNING and job.claimed_by == "holder"
        events = [e.kind for e in await rt.store.list_events(approval_id)]
        assert "job_retrying" not in events and "job_failed" not in events  # nothing ran: nothing recorded
    finally:
        await rt.stop()
