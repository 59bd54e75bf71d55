"""A stopping runtime (SIGTERM in `serve`): it claims no more, lets a running job finish within
server.shutdown_timeout or cuts it and hands it back, and closes its store whatever failed."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.core.errors import StoreUnavailable
from gateway.core.models import JobStatus, Outcome
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.service.commands import Authority
from gateway.testing import FakeClock


def sleeper(seconds: float) -> dict[str, Any]:
    return {"command": [sys.executable, "-c", f"import time; time.sleep({seconds})"], "timeout": "60s"}


async def _running(rt: Runtime, approval_id: str) -> None:
    for _ in range(400):
        job = await rt.store.get_job(approval_id)
        if job is not None and job.status is JobStatus.RUNNING:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the job never started")


async def _start(
    settings_factory: Callable[..., Any], clock: FakeClock, job_seconds: float, shutdown: str
) -> tuple[Runtime, str]:
    settings = settings_factory(workers={"agent": sleeper(job_seconds)}, server={"shutdown_timeout": shutdown})
    rt = Runtime(settings, clock=clock, owner="stopping")
    await rt.start(exclusive=True)
    approval, _ = await rt.service.suspend(SuspendRequest(run_id="r", step="s", title="t", worker="agent"))
    await rt.service.decide(approval.id, Outcome.APPROVE, "web:bob", authority=Authority.OPERATOR)
    await _running(rt, approval.id)
    return rt, approval.id


async def test_a_stopping_runtime_is_not_ready(settings_factory: Callable[..., Any], clock: FakeClock) -> None:
    rt = Runtime(settings_factory(), clock=clock, owner="t")
    await rt.start(exclusive=True)
    try:
        assert await rt.ready()
        rt.begin_stop()  # SIGTERM: /readyz answers 503 while in-flight requests drain
        assert not await rt.ready()
    finally:
        await rt.stop()


@pytest.mark.subprocess
async def test_a_running_job_finishes_within_the_shutdown_timeout(
    settings_factory: Callable[..., Any], clock: FakeClock
) -> None:
    rt, approval_id = await _start(settings_factory, clock, 0.5, "5s")
    await rt.stop()
    job = await _reopened(rt, approval_id)
    assert (job.status, job.attempts) == (JobStatus.SUCCEEDED, 1)


@pytest.mark.subprocess
async def test_a_job_longer_than_the_shutdown_timeout_is_cut_and_handed_back(
    settings_factory: Callable[..., Any], clock: FakeClock
) -> None:
    rt, approval_id = await _start(settings_factory, clock, 60, "0.3s")
    started = asyncio.get_running_loop().time()
    await rt.stop()
    assert asyncio.get_running_loop().time() - started < 0.3 + 2
    job = await _reopened(rt, approval_id)
    assert (job.status, job.claimed_by, job.lease_until) == (JobStatus.QUEUED, None, None)  # due again at once


async def _reopened(rt: Runtime, approval_id: str) -> Any:
    from gateway.store import open_store

    store = open_store(rt.settings.store.url)
    await store.open()
    try:
        return await store.get_job(approval_id)
    finally:
        await store.close()


async def test_the_store_is_closed_even_when_closing_something_else_fails(
    settings_factory: Callable[..., Any], clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    rt = Runtime(settings_factory(), clock=clock, owner="t")
    await rt.start(exclusive=True)

    async def broken() -> None:
        raise RuntimeError("cannot close")

    async def hangs() -> None:
        await asyncio.Event().wait()

    rt.channels["web"].close = broken  # type: ignore[method-assign]
    rt.worker.close = hangs  # type: ignore[method-assign]
    await rt.stop()
    with pytest.raises(StoreUnavailable):
        await rt.store.get_approval("x")
    assert "closing the channel web failed at shutdown: RuntimeError" in caplog.text
    assert "closing the worker failed at shutdown: TimeoutError" in caplog.text
    again = Runtime(settings_factory(), clock=clock, owner="next")
    await again.start(exclusive=True)  # the serve lock was let go with the store
    await again.stop()


async def test_a_start_that_fails_half_way_closes_the_store(
    settings_factory: Callable[..., Any], clock: FakeClock, tmp_path: Path
) -> None:
    rt = Runtime(settings_factory(), clock=clock, owner="t")

    async def refuses() -> None:
        raise RuntimeError("the channel cannot start")

    rt.channels["web"].start = refuses  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="cannot start"):
        await rt.start(exclusive=True)
    with pytest.raises(StoreUnavailable):
        await rt.store.get_approval("x")
    again = Runtime(settings_factory(), clock=clock, owner="next")
    await again.start(exclusive=True)
    await again.stop()
