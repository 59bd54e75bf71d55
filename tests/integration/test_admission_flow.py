"""Decided approvals first, through the runtime: while a resume job waits to launch, a suspend
waits and a new card's post is held back, a decided card's sync is not (gateway.core.admission).
The clock is injected: no test sleeps through the bound."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from gateway.core.errors import ConfigError
from gateway.core.models import Approval, JobStatus, Outcome
from gateway.jobs import worker as worker_module
from gateway.jobs.launch import AttemptOutcome, AttemptResult, Launch, Launcher
from gateway.jobs.pool import EntrypointPool
from gateway.runtime import Runtime
from gateway.service import SuspendRequest, new_id
from gateway.service.commands import Authority
from gateway.settings import WorkerSettings
from gateway.testing import FakeClock, make_settings
from tests.integration.conftest import MakeRt
from tests.integration.test_outbox import scripted


def _request(worker: str | None = None) -> SuspendRequest:
    return SuspendRequest(run_id=f"run-{new_id()}", step="s", title="t", worker=worker)


def _held(rt: Runtime) -> tuple[float, float]:
    count = rt.metrics.registry.get_sample_value("hitl_suspend_held_seconds_count") or 0.0
    total = rt.metrics.registry.get_sample_value("hitl_suspend_held_seconds_sum") or 0.0
    return count, total


async def _still_pending(task: asyncio.Future[Any]) -> bool:
    """True if `task` is still waiting after the loop went idle (store calls answered)."""
    for _ in range(20):
        await asyncio.sleep(0.005)
    return not task.done()


async def _until(cond: Callable[[], bool]) -> None:
    """Poll `cond` while the store's thread answers (real I/O, not the bound: that is the clock's)."""
    for _ in range(1000):
        if cond():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("condition not met within 5 s")


async def test_a_suspend_waits_while_a_claimed_job_waits_to_launch(runtime: Runtime, clock: FakeClock) -> None:
    runtime.gate.claimed(["apr_queued"], more=False)
    task = asyncio.create_task(runtime.service.suspend(_request()))
    assert await _still_pending(task)
    assert await runtime.store.list_approvals(limit=10) == []  # not admitted yet
    clock.advance(0.04)
    runtime.gate.launched("apr_queued")
    approval, created = await asyncio.wait_for(task, 5)
    assert created
    assert approval.created_at == clock.now()  # admitted now, not when it arrived
    assert _held(runtime) == (1.0, pytest.approx(0.04))


async def test_a_held_suspend_is_admitted_after_the_bound(runtime: Runtime, clock: FakeClock) -> None:
    runtime.gate.queued()  # jobs due that no claim took (the worker is busy): they may stay
    task = asyncio.create_task(runtime.service.suspend(_request()))
    assert await _still_pending(task)
    clock.advance(runtime.settings.scheduler.admission_wait.total_seconds())
    runtime.gate.recheck()
    await asyncio.wait_for(task, 5)
    assert _held(runtime) == (1.0, pytest.approx(0.25))


async def test_no_backlog_no_wait(runtime: Runtime) -> None:
    await runtime.service.suspend(_request())
    assert _held(runtime) == (0.0, 0.0)


async def test_a_new_cards_post_is_held_back_and_a_sync_is_not(runtime: Runtime, clock: FakeClock) -> None:
    channel = scripted(runtime)
    decided, _ = await runtime.service.suspend(_request())
    await runtime.outbox.drain()
    await runtime.service.decide(decided.id, Outcome.APPROVE, "operator:ops", authority=Authority.OPERATOR)
    fresh, _ = await runtime.service.suspend(_request())  # its post is queued before the backlog
    runtime.gate.claimed(["apr_queued"], more=False)
    round_ = asyncio.create_task(runtime.outbox.run_once())
    await _until(lambda: ("update", f"msg-{decided.id}", "approved") in channel.calls)  # the sync went
    assert await _still_pending(round_)
    assert [c for c in channel.calls if c[0] == "post" and c[1] == fresh.id] == []  # the post waits
    runtime.gate.launched("apr_queued")
    assert await asyncio.wait_for(round_, 5) == 2
    assert ("post", fresh.id, "waiting_approval") in channel.calls


class _BusyPool(EntrypointPool):
    """An entrypoint pool whose processes are all busy until `free` is set (no real process)."""

    def __init__(self, cfg: WorkerSettings) -> None:
        super().__init__(cfg)
        self.free = asyncio.Event()

    async def _acquire(self) -> Any:
        await self.free.wait()
        return _Proc()

    async def _ask(self, proc: Any, launch: Launch) -> AttemptResult:
        return AttemptResult(AttemptOutcome.SUCCEEDED)

    async def _release(self, proc: Any, healthy: bool) -> None:
        return None


class _Proc:
    returncode = None


async def test_the_worker_holds_suspends_until_its_pool_takes_the_job(
    make_rt: MakeRt, monkeypatch: pytest.MonkeyPatch
) -> None:
    pools: list[_BusyPool] = []

    def build(cfg: WorkerSettings, secret: str) -> Launcher:
        pools.append(_BusyPool(cfg))
        return pools[-1]

    monkeypatch.setattr(worker_module, "build_launcher", build)
    rt = await make_rt(pool={"entrypoint": "tests.fakes.entry:handle", "pool_size": 1})
    loop = asyncio.create_task(rt.worker.run_forever())
    try:
        first, _ = await rt.service.suspend(_request("pool"))
        assert not rt.gate.backlog  # a suspend with no job queued is not a backlog
        await rt.service.decide(first.id, Outcome.APPROVE, "operator:ops", authority=Authority.OPERATOR)
        assert rt.gate.backlog  # the decision's commit queued its job
        await _until(lambda: bool(pools) and first.id in rt.gate.state.unlaunched)  # claimed, queued in the pool
        assert not rt.gate.state.due  # the claim took every due job
        second = asyncio.create_task(rt.service.suspend(_request("pool")))
        assert await _still_pending(second)
        pools[0].free.set()  # a process takes the job: launched
        made: Approval = (await asyncio.wait_for(second, 5))[0]
        assert made.status.value == "waiting_approval"
        await _until(lambda: not rt.gate.backlog)
    finally:
        rt.worker.stop(asyncio.get_running_loop().time() + 1)
        await asyncio.wait_for(loop, 5)
    assert not rt.gate.backlog


async def test_without_the_worker_loop_nothing_is_held(make_rt: MakeRt) -> None:
    """A runtime whose worker does not run (a CLI, a test draining by hand) never holds a suspend."""
    rt = await make_rt(pool={"entrypoint": "tests.fakes.entry:handle", "pool_size": 1})
    first, _ = await rt.service.suspend(_request("pool"))
    await rt.service.decide(first.id, Outcome.APPROVE, "operator:ops", authority=Authority.OPERATOR)
    assert not rt.gate.backlog
    await asyncio.wait_for(rt.service.suspend(_request("pool")), 5)


class _LongPool(_BusyPool):
    """A pool whose process is taken at once and whose job runs until `free` is set."""

    async def _acquire(self) -> Any:
        return _Proc()

    async def _ask(self, proc: Any, launch: Launch) -> AttemptResult:
        await self.free.wait()
        return AttemptResult(AttemptOutcome.SUCCEEDED)


async def test_a_full_worker_does_not_hold_suspends_for_jobs_it_cannot_claim(
    make_rt: MakeRt, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every slot runs a long job and another job is queued: no claim can take it until a slot
    frees, so a new suspend must not pay the whole bound waiting for it."""
    pools: list[_LongPool] = []

    def build(cfg: WorkerSettings, secret: str) -> Launcher:
        pools.append(_LongPool(cfg))
        return pools[-1]

    monkeypatch.setattr(worker_module, "build_launcher", build)
    rt = await make_rt(pool={"entrypoint": "tests.fakes.entry:handle", "pool_size": 1})
    rt.worker.concurrency = 1
    loop = asyncio.create_task(rt.worker.run_forever())
    try:
        first, _ = await rt.service.suspend(_request("pool"))
        second, _ = await rt.service.suspend(_request("pool"))
        await rt.service.decide(first.id, Outcome.APPROVE, "operator:ops", authority=Authority.OPERATOR)
        await _until(lambda: bool(pools) and not rt.gate.backlog)  # claimed and launched: the slot is taken
        await rt.service.decide(second.id, Outcome.APPROVE, "operator:ops", authority=Authority.OPERATOR)
        third = asyncio.create_task(rt.service.suspend(_request("pool")))
        assert not await _still_pending(third)  # not held: the queued job waits for a slot, not for it
        assert _held(rt) == (0.0, 0.0)
        pools[0].free.set()
    finally:
        rt.worker.stop(asyncio.get_running_loop().time() + 1)
        await asyncio.wait_for(loop, 5)


class _CountingPool(_LongPool):
    """A `_LongPool` that counts the launches it took (`running`)."""

    running = 0

    async def _ask(self, proc: Any, launch: Launch) -> AttemptResult:
        type(self).running += 1
        return await super()._ask(proc, launch)


async def test_resume_concurrency_bounds_the_jobs_one_process_holds(
    settings_factory: Callable[..., Any], clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[scheduler] resume_concurrency` jobs run at once, however many are due: the rest stay
    queued in the store for a slot (or another replica), not claimed into this process."""
    pools: list[_CountingPool] = []

    def build(cfg: WorkerSettings, secret: str) -> Launcher:
        pools.append(_CountingPool(cfg))
        return pools[-1]

    monkeypatch.setattr(worker_module, "build_launcher", build)
    monkeypatch.setattr(_CountingPool, "running", 0)
    # More processes than slots: the slots bound the claims here, not the pool (its own bound,
    # tests/integration/test_claim_share.py)
    pool = {"entrypoint": "tests.fakes.entry:handle", "pool_size": 4}
    rt = Runtime(settings_factory(workers={"pool": pool}, scheduler={"resume_concurrency": 3}), clock=clock, owner="t")
    await rt.start(background=False)
    loop = asyncio.create_task(rt.worker.run_forever())
    try:
        for _ in range(5):
            made, _ = await rt.service.suspend(_request("pool"))
            await rt.service.decide(made.id, Outcome.APPROVE, "operator:ops", authority=Authority.OPERATOR)
        await _until(lambda: _CountingPool.running == 3)
        for _ in range(20):  # room for a fourth claim, were it allowed
            await asyncio.sleep(0.005)
        assert _CountingPool.running == 3
        queued = await rt.store.list_jobs(JobStatus.QUEUED, 10)
        assert len(queued) == 2
        pools[0].free.set()
        await _until(lambda: _CountingPool.running == 5)
    finally:
        rt.worker.stop(asyncio.get_running_loop().time() + 1)
        await asyncio.wait_for(loop, 5)
        await rt.stop()


def test_resume_concurrency_setting() -> None:
    url = "sqlite:///:memory:"
    assert make_settings(url).scheduler.resume_concurrency == 16
    assert make_settings(url, {"scheduler": {"resume_concurrency": 64}}).scheduler.resume_concurrency == 64
    for bad in (0, 1001):
        with pytest.raises(ConfigError, match=r"scheduler\.resume_concurrency"):
            make_settings(url, {"scheduler": {"resume_concurrency": bad}})
