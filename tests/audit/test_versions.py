"""Versioned resumes: a worker with `accepts` globs resumes only runs suspended by matching code;
a mismatch fails the job with `version_mismatch` naming both versions, and a retry after
reconfiguring the worker runs it. The SDK sends `code_version`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.config import Settings
from gateway.core.models import JobStatus
from gateway.runtime import Runtime
from gateway.sdk import DurableRun, Suspended
from gateway.service.jobs import RetryJob
from gateway.testing import FakeClock
from tests.audit.conftest import decided
from tests.integration.gateway_fixture import API_KEY, start_env


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'gateway.db'}"


async def runtime_accepting(settings_factory: Callable[..., Settings], clock: FakeClock, *accepts: str) -> Runtime:
    settings = settings_factory(workers={"agent": {"command": ["true"], "accepts": list(accepts)}})
    rt = Runtime(settings, clock=clock, owner="test")
    await rt.start(background=False)
    return rt


@pytest.mark.subprocess
async def test_match_runs_mismatch_fails_retry_after_reconfiguring_runs(
    settings_factory: Callable[..., Settings], clock: FakeClock
) -> None:
    rt = await runtime_accepting(settings_factory, clock, "2.*")
    try:
        (match,) = await decided(rt, 1, clock, code_version="2.1.0", run="new")
        (old,) = await decided(rt, 1, clock, code_version="1.4", run="old")
        (unversioned,) = await decided(rt, 1, clock, run="none")
        job = await rt.store.get_job(match)
        assert job is not None and job.status is JobStatus.SUCCEEDED
        job = await rt.store.get_job(old)
        assert job is not None and job.status is JobStatus.FAILED and job.attempts == 1
        assert job.last_error == (
            "version_mismatch: the run was suspended with code_version '1.4'; worker 'agent' accepts 2.*"
        )
        failed = [e for e in await rt.store.list_events(old) if e.kind == "job_failed"]
        assert failed[0].data["error"].startswith("version_mismatch")
        # refused before any launch: the claim's job_started, then the failure that says why
        kinds = [e.kind for e in await rt.store.list_events(old) if e.kind.startswith("job_")]
        assert kinds == ["job_queued", "job_started", "job_failed"]
        job = await rt.store.get_job(unversioned)
        assert job is not None and job.status is JobStatus.FAILED
        assert job.last_error is not None and "with no code_version" in job.last_error
        assert [j.approval_id for j in await rt.store.list_jobs(JobStatus.FAILED, 10)] == [unversioned, old]
        suspended = next(e for e in await rt.store.list_events(old) if e.kind == "suspended")
        assert suspended.data["code_version"] == "1.4" and len(suspended.data["args_hash"]) == 64
    finally:
        await rt.stop()
    rt = await runtime_accepting(settings_factory, clock, "1.*", "2.*")  # the old code deployed again
    try:
        await rt.jobs.retry(RetryJob(old, "operator:test"))
        await rt.worker.drain()
        job = await rt.store.get_job(old)
        assert job is not None and job.status is JobStatus.SUCCEEDED, job
        assert (await rt.audit.verify()).ok
    finally:
        await rt.stop()


async def test_sdk_sends_code_version(
    aiohttp_server: Callable[..., Any],
    settings_factory: Callable[..., Any],
    clock: FakeClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = await start_env(aiohttp_server, settings_factory, clock, tmp_path)
    async with await DurableRun.open("v-1", gateway_url=env.url, api_key=API_KEY, code_version="2.3") as run:
        with pytest.raises(Suspended) as first:
            await run.approval("ship", title="Ship it", args={"n": 1})
    monkeypatch.setenv("HITL_CODE_VERSION", "2.4")
    async with await DurableRun.open("v-2", gateway_url=env.url, api_key=API_KEY) as run:
        with pytest.raises(Suspended) as second:
            await run.approval("ship", title="Ship it", args={"n": 2})
    versions = [(await env.rt.store.get_approval(s.value.approval_id)) for s in (first, second)]
    assert [a.code_version for a in versions if a is not None] == ["2.3", "2.4"]
    assert [a.to_api()["code_version"] for a in versions if a is not None] == ["2.3", "2.4"]
