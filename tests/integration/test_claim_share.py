"""A replica claims no more resume jobs than its `entrypoint` pools can start soon: their free
processes plus `[scheduler] resume_prefetch` per process. A burst of due jobs is then shared by
the replicas instead of queueing behind one replica's pool while another sits idle, and a replica
alone still has a job claimed and read ahead for each process (gateway/jobs/worker.py,
`WorkerRunner._pool_room`). The pools are fakes with real bounds (no process is started)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest

from gateway.core.errors import ConfigError
from gateway.core.models import ClaimedJob, JobStatus, Outcome
from gateway.jobs.launch import AttemptOutcome, AttemptResult, Launch
from gateway.jobs.pool import EntrypointPool
from gateway.runtime import Runtime
from gateway.service import SuspendRequest, new_id
from gateway.service.commands import Authority
from gateway.settings import WorkerSettings
from gateway.testing import FakeClock, make_settings
from tests.integration.test_admission_flow import _until

POOL = {"entrypoint": "tests.fakes.entry:handle", "pool_size": 2}


class _StepPool(EntrypointPool):
    """`pool_size` fake processes; a step runs until the test lets it end (`end`).
    `started`: the approvals a process took; `waiting`: the jobs waiting for a process."""

    def __init__(self, cfg: WorkerSettings) -> None:
        super().__init__(cfg)
        self.processes = asyncio.Semaphore(cfg.pool_size)
        self.steps = asyncio.Semaphore(0)
        self.started: list[str] = []
        self.waiting = 0

    async def _acquire(self) -> Any:
        self.waiting += 1
        try:
            await self.processes.acquire()
        finally:
            self.waiting -= 1
        return _Proc()

    async def _ask(self, proc: Any, launch: Launch) -> AttemptResult:
        self.started.append(launch.approval_id)
        await self.steps.acquire()
        return AttemptResult(AttemptOutcome.SUCCEEDED)

    async def _release(self, proc: Any, healthy: bool) -> None:
        self.processes.release()

    def end(self, steps: int = 1) -> None:
        """Let `steps` steps end (running now or to come)."""
        for _ in range(steps):
            self.steps.release()


class _Proc:
    returncode = None


def _install(rt: Runtime, name: str = "pool") -> _StepPool:
    pool = _StepPool(rt.settings.workers[name])
    pool.on_start = rt.gate.launched  # as WorkerRunner.launcher wires a real pool
    rt.worker.launchers[name] = pool
    return pool


async def _decided(rt: Runtime, worker: str = "pool") -> str:
    made, _ = await rt.service.suspend(SuspendRequest(run_id=f"run-{new_id()}", step="s", title="t", worker=worker))
    await rt.service.decide(made.id, Outcome.APPROVE, "operator:ops", authority=Authority.OPERATOR)
    return made.id


async def _holders(rt: Runtime) -> Counter[str | None]:
    """Who holds the jobs now running (claimed), and how many are still queued (None)."""
    running = await rt.store.list_jobs(JobStatus.RUNNING, 100)
    queued = await rt.store.list_jobs(JobStatus.QUEUED, 100)
    return Counter([j.claimed_by for j in running] + [None] * len(queued))


async def _stop(rt: Runtime, loop: asyncio.Task[None] | None) -> None:
    if loop is not None:
        rt.worker.stop(asyncio.get_running_loop().time() + 1)
        await asyncio.wait_for(loop, 5)
    await rt.stop()


async def test_a_burst_of_resume_jobs_is_shared_by_two_replicas(pg_url: str) -> None:
    """Two replicas on one PostgreSQL store, pools of 2, 10 jobs due at once. The first replica
    to claim takes 4 (2 to run, 1 read ahead per process), not all 10: the second one, started
    after, runs 2 of the rest at once instead of idling while they queue behind the first's pool."""
    settings = make_settings(pg_url, {"workers": {"pool": POOL}})
    clock = FakeClock()
    a, b = Runtime(settings, clock=clock, owner="A"), Runtime(settings, clock=clock, owner="B")
    loop_a = loop_b = None
    await a.start(background=False)
    await b.start(background=False)
    try:
        pool_a, pool_b = _install(a), _install(b)
        ids = [await _decided(a) for _ in range(10)]
        loop_a = asyncio.create_task(a.worker.run_forever())
        await _until(lambda: len(pool_a.started) == 2 and pool_a.waiting == 2)
        loop_b = asyncio.create_task(b.worker.run_forever())
        await _until(lambda: len(pool_b.started) == 2)  # before: A held all 10, nothing was due for B
        await _until(lambda: pool_b.waiting == 2)
        assert await _holders(a) == {"A": 4, "B": 4, None: 2}
        assert len(pool_a.started) == 2  # A's pool is still busy with its first two

        pool_a.end(10)
        pool_b.end(10)
        done = {j.approval_id for j in await a.store.list_jobs(JobStatus.SUCCEEDED, 100)}
        for _ in range(1000):
            if done == set(ids):
                break
            await asyncio.sleep(0.005)
            done = {j.approval_id for j in await a.store.list_jobs(JobStatus.SUCCEEDED, 100)}
        assert done == set(ids)
        assert sorted(pool_a.started + pool_b.started) == sorted(ids)  # each launched once
        assert len(pool_b.started) >= 4
    finally:
        await _stop(a, loop_a)
        await _stop(b, loop_b)


async def test_a_replica_alone_has_a_job_read_ahead_for_each_pool_process(
    settings_factory: Callable[..., Any], clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No slower alone: when a process frees, the next job takes it at once (claimed and read
    while the step ran), not after a claim; the claim that refills the read-ahead comes meanwhile."""
    rt = Runtime(settings_factory(workers={"pool": POOL}), clock=clock, owner="alone")
    await rt.start(background=False)
    loop = None
    try:
        pool = _install(rt)
        ids = [await _decided(rt) for _ in range(6)]
        claim = rt.worker.jobs.claim
        opened = asyncio.Event()
        asked: list[int] = []

        async def held_back(now: datetime, owner: str, lease: timedelta, limit: int) -> list[ClaimedJob]:
            asked.append(limit)
            await opened.wait()
            return await claim(now, owner, lease, limit)

        loop = asyncio.create_task(rt.worker.run_forever())
        # Both processes busy, and at least one job read ahead for each (all 6 before the bound).
        await _until(lambda: len(pool.started) == 2 and pool.waiting >= 2)
        assert (await _holders(rt))["alone"] >= 4

        monkeypatch.setattr(rt.worker.jobs, "claim", held_back)  # from now on a claim waits for `opened`
        pool.end()  # one step ends
        await _until(lambda: len(pool.started) == 3)  # the freed process took a job claimed earlier
        opened.set()
        await _until(lambda: pool.waiting >= 2)  # (re)filled: one job read ahead per process again

        pool.end(10)
        await _until(lambda: len(pool.started) == 6)
        assert sorted(pool.started) == sorted(ids)
    finally:
        await _stop(rt, loop)


async def test_a_job_recording_its_outcome_no_longer_counts_against_its_pool(
    settings_factory: Callable[..., Any], clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job counts against its pool until it leaves its process, not until its outcome is
    recorded: the record's commit holds a slot, and a slow one must not leave the next process
    without a job read ahead."""
    pool_cfg = POOL | {"pool_size": 1}
    rt = Runtime(settings_factory(workers={"pool": pool_cfg}), clock=clock, owner="alone")
    await rt.start(background=False)
    loop = None
    try:
        pool = _install(rt)
        for _ in range(4):
            await _decided(rt)
        loop = asyncio.create_task(rt.worker.run_forever())
        await _until(lambda: len(pool.started) == 1 and pool.waiting == 1)
        finish = rt.worker.jobs.finish
        recorded = asyncio.Event()
        recording: list[int] = []

        async def slow(job_id: int, owner: str, **kw: Any) -> bool:
            recording.append(job_id)
            await recorded.wait()
            return await finish(job_id, owner, **kw)

        monkeypatch.setattr(rt.worker.jobs, "finish", slow)
        pool.end()  # the first step ends; its outcome's commit is held back
        await _until(lambda: len(recording) == 1 and len(pool.started) == 2)
        await _until(lambda: pool.waiting == 1)  # read ahead for the process while the first records
        recorded.set()
        pool.end(10)
        await _until(lambda: len(pool.started) == 4)
    finally:
        await _stop(rt, loop)


async def test_with_a_worker_of_another_kind_the_slots_bound_the_claim(
    settings_factory: Callable[..., Any], clock: FakeClock
) -> None:
    """A `url` or `command` worker starts its job at once, and the claim cannot pick jobs by
    worker: with one configured, a claim takes up to `resume_concurrency`, as before."""
    workers = {"pool": POOL, "hook": {"url": "https://worker.test/resume", "allowed_hosts": ["worker.test"]}}
    rt = Runtime(settings_factory(workers=workers), clock=clock, owner="mixed")
    await rt.start(background=False)
    loop = None
    try:
        pool = _install(rt)
        for _ in range(6):
            await _decided(rt)
        loop = asyncio.create_task(rt.worker.run_forever())
        await _until(lambda: len(pool.started) == 2 and pool.waiting == 4)
        assert await _holders(rt) == {"mixed": 6}
        pool.end(10)
        await _until(lambda: len(pool.started) == 6)
    finally:
        await _stop(rt, loop)


def test_resume_prefetch_setting() -> None:
    url = "sqlite:///:memory:"
    assert make_settings(url).scheduler.resume_prefetch == 1
    assert make_settings(url, {"scheduler": {"resume_prefetch": 0}}).scheduler.resume_prefetch == 0
    for bad in (-1, 101):
        with pytest.raises(ConfigError, match=r"scheduler\.resume_prefetch"):
            make_settings(url, {"scheduler": {"resume_prefetch": bad}})


async def test_a_busy_pool_does_not_hold_back_another_pools_due_job(
    settings_factory: Callable[..., Any], clock: FakeClock
) -> None:
    """Two pools of one process each: pool "slow" has a long step running and 3 jobs waiting
    for it; a job for pool "fast" falls due. Its pool is idle, so it must start now, not once
    the slow pool's step (maybe hours long) ends: the bound is each pool's own room, not their
    sum (before, the slow pool's queue used up the sum and no claim came)."""
    workers = {"slow": POOL | {"pool_size": 1}, "fast": POOL | {"pool_size": 1}}
    rt = Runtime(settings_factory(workers=workers), clock=clock, owner="alone")
    await rt.start(background=False)
    loop = None
    try:
        slow, fast = _install(rt, "slow"), _install(rt, "fast")
        for _ in range(4):
            await _decided(rt, "slow")
        loop = asyncio.create_task(rt.worker.run_forever())
        await _until(lambda: len(slow.started) == 1 and slow.waiting >= 1)
        quick = await _decided(rt, "fast")
        rt.worker.notify()
        await _until(lambda: fast.started == [quick])  # before: never, while the slow step runs
        assert len(slow.started) == 1
        fast.end(10)
        slow.end(10)
        await _until(lambda: len(slow.started) == 4)
    finally:
        await _stop(rt, loop)
