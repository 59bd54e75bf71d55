"""Resume jobs with real subprocesses: each worker kind, transient vs terminal, retries, API/CLI."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.core.models import Approval, JobStatus, Outcome, ResumeJob
from gateway.core.observers import Observer
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.service import SuspendRequest, new_id
from gateway.service.commands import Authority
from gateway.testing import FakeClock
from tests.conftest import AUTH, OPERATOR
from tests.integration.conftest import MakeRt

FAKES = Path(__file__).parents[1] / "fakes"


def cmd(mode: str, out: Path, **over: Any) -> dict[str, Any]:
    return {
        "command": [sys.executable, str(FAKES / "worker_cmd.py"), mode, str(out)],
        "timeout": "20s",
        "max_attempts": 3,
        "retry_base": "10s",
        **over,
    }


async def decided(rt: Runtime, worker: str, outcome: Outcome = Outcome.APPROVE, state: Any = None) -> Approval:
    req = SuspendRequest(
        run_id=f"run-{new_id()}",
        step="charge",
        title="Charge",
        args={"amount": 42, "email": "carol@example.com"},
        state={"cursor": 1} if state is None else state,
        worker=worker,
    )
    approval, _ = await rt.service.suspend(req)
    return await rt.service.decide(approval.id, outcome, "web:bob", authority=Authority.OPERATOR)


async def job(rt: Runtime, approval: Approval) -> ResumeJob:
    found = await rt.store.get_job(approval.id)
    assert found is not None
    return found


async def kinds(rt: Runtime, approval: Approval) -> list[str]:
    return [e.kind for e in await rt.store.list_events(approval.id) if e.kind.startswith("job_")]


def runs(out: Path, approval: Approval) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(out.glob(f"{approval.id}.*.json"))]


@pytest.mark.subprocess
async def test_command_worker_gets_document_env_and_output_is_kept_redacted(make_rt: MakeRt, tmp_path: Path) -> None:
    rt = await make_rt(agent=cmd("ok", tmp_path))
    approval = await decided(rt, "agent")
    assert await rt.worker.drain() == 1
    (seen,) = runs(tmp_path, approval)
    assert seen["doc"]["status"] == "approved" and seen["doc"]["state"] == {"cursor": 1}
    assert seen["doc"]["decision"]["decided_by"] == "web:bob"
    assert seen["env"]["HITL_APPROVAL_ID"] == approval.id
    assert seen["env"]["HITL_GATEWAY_URL"] == rt.settings.server.public_url
    assert (await rt.service.resumes.approval_for_token(seen["env"]["HITL_RESUME_TOKEN"])).id == approval.id
    done = await job(rt, approval)
    assert done.status is JobStatus.SUCCEEDED and done.attempts == 1 and done.claimed_by is None
    assert done.output_tail is not None
    assert "warning on stderr" in done.output_tail and "[redacted:email]" in done.output_tail
    assert "alice@example.com" not in done.output_tail
    assert seen["env"]["HITL_RESUME_TOKEN"] not in done.output_tail
    assert await kinds(rt, approval) == ["job_queued", "job_started", "job_succeeded"]


@pytest.mark.subprocess
@pytest.mark.parametrize("outcome", ["reject", "cancel", "timeout"])
async def test_every_outcome_resumes_the_run(make_rt: MakeRt, tmp_path: Path, clock: FakeClock, outcome: str) -> None:
    rt = await make_rt(agent=cmd("ok", tmp_path))
    req = SuspendRequest(run_id="r", step="s", title="t", worker="agent", policy="default")
    approval, _ = await rt.service.suspend(req)
    if outcome == "reject":
        await rt.service.decide(approval.id, Outcome.REJECT, "web:bob", authority=Authority.OPERATOR)
    elif outcome == "cancel":
        await rt.service.cancel(approval.id, "operator:api", "not needed")
    else:
        clock.advance(hours=1)
        await rt.service.apply_due(approval.id, clock.now())
    await rt.worker.drain()
    (seen,) = runs(tmp_path, approval)
    expected = {"reject": "rejected", "cancel": "cancelled", "timeout": "timed_out"}[outcome]
    assert seen["doc"]["status"] == expected
    assert seen["doc"]["decision"]["outcome"] == "reject"
    assert (await job(rt, approval)).status is JobStatus.SUCCEEDED


@pytest.mark.parametrize(
    ("mode", "error"), [("tempfail", "exit status 75"), ("signal", "killed by SIGKILL")], ids=["exit75", "signal"]
)
@pytest.mark.subprocess
async def test_transient_failures_retry_with_backoff_then_fail(
    make_rt: MakeRt, tmp_path: Path, clock: FakeClock, mode: str, error: str
) -> None:
    rt = await make_rt(agent=cmd(mode, tmp_path))
    approval = await decided(rt, "agent")
    await rt.worker.drain()
    queued = await job(rt, approval)
    assert queued.status is JobStatus.QUEUED and queued.last_error == error
    assert 5 <= (queued.next_attempt_at - clock.now()).total_seconds() <= 10  # backoff(1) with jitter
    assert await rt.worker.drain() == 0  # not due yet
    for _ in range(2):
        clock.advance(3600)
        assert await rt.worker.drain() == 1
    failed = await job(rt, approval)
    assert failed.status is JobStatus.FAILED and failed.attempts == 3
    assert await kinds(rt, approval) == [
        "job_queued",
        *["job_started", "job_retrying"] * 2,
        "job_started",
        "job_failed",
    ]
    assert len(runs(tmp_path, approval)) == 3


@pytest.mark.subprocess
async def test_terminal_exit_fails_at_once(make_rt: MakeRt, tmp_path: Path) -> None:
    rt = await make_rt(agent=cmd("fail", tmp_path))
    approval = await decided(rt, "agent")
    await rt.worker.drain()
    failed = await job(rt, approval)
    assert (failed.status, failed.attempts, failed.last_error) == (JobStatus.FAILED, 1, "exit status 3")
    assert await kinds(rt, approval) == ["job_queued", "job_started", "job_failed"]


async def test_missing_command_is_terminal(make_rt: MakeRt, tmp_path: Path) -> None:
    """A program missing at start-up stops the start (tests/unit/test_config_first_hour.py);
    one removed after it is a terminal failure of the job."""
    program = tmp_path / "gone"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    rt = await make_rt(agent={"command": [str(program)]})
    program.unlink()
    approval = await decided(rt, "agent")
    await rt.worker.drain()
    failed = await job(rt, approval)
    assert failed.status is JobStatus.FAILED and "cannot start" in (failed.last_error or "")


@pytest.mark.subprocess
async def test_timeout_kills_the_whole_process_group(make_rt: MakeRt, tmp_path: Path) -> None:
    rt = await make_rt(agent=cmd("hang", tmp_path, timeout="1500ms"))
    approval = await decided(rt, "agent")
    await rt.worker.drain()
    queued = await job(rt, approval)
    assert queued.status is JobStatus.QUEUED and "timed out" in (queued.last_error or "")
    grandchild = int((tmp_path / "grandchild.pid").read_text())
    with pytest.raises(ProcessLookupError):
        for _ in range(50):  # reaped by init soon after the SIGKILL
            os.kill(grandchild, 0)
            await asyncio.sleep(0.05)


@pytest.mark.subprocess
async def test_failed_jobs_are_listed_and_retried_over_http(
    settings_factory: Callable[..., Any], clock: FakeClock, tmp_path: Path, aiohttp_client: Any
) -> None:
    rt = Runtime(settings_factory(workers={"agent": cmd("fail", tmp_path)}), clock=clock, owner="test")
    client = await aiohttp_client(create_app(rt.settings, runtime=rt, background=False))
    approval = await decided(rt, "agent")
    await rt.worker.drain()
    listed = await (await client.get("/v1/jobs?status=failed", headers=OPERATOR)).json()
    assert [j["approval_id"] for j in listed["items"]] == [approval.id]
    mine = await (await client.get("/v1/jobs?status=failed", headers=AUTH)).json()
    assert mine["items"] == []  # an agent lists only the jobs of its own approvals
    assert (await client.get("/v1/jobs?status=nope", headers=AUTH)).status == 400
    assert (await client.post(f"/v1/approvals/{approval.id}/retry")).status == 401
    assert (await client.post(f"/v1/approvals/{approval.id}/retry", headers=AUTH)).status == 403
    resp = await client.post(f"/v1/approvals/{approval.id}/retry", json={"by": "web:ops"}, headers=OPERATOR)
    assert resp.status == 200, await resp.text()
    requeued = [e for e in await rt.store.list_events(approval.id) if e.kind == "job_requeued"]
    assert [(e.actor, e.data.get("on_behalf_of")) for e in requeued] == [("operator:test", "web:ops")]
    body = await resp.json()
    assert (body["status"], body["attempts"]) == ("queued", 0)
    again = await client.post(f"/v1/approvals/{approval.id}/retry", headers=OPERATOR)
    assert again.status == 409 and (await again.json())["error"]["code"] == "conflict"
    assert (await client.post("/v1/approvals/missing/retry", headers=OPERATOR)).status == 404
    await rt.worker.drain()
    assert len(runs(tmp_path, approval)) == 2
    assert "job_requeued" in await kinds(rt, approval)


@pytest.mark.subprocess
async def test_background_loop_runs_jobs_side_by_side(make_rt: MakeRt, tmp_path: Path) -> None:
    slow = {"command": [sys.executable, "-c", "import time; time.sleep(3)"], "timeout": "20s"}
    rt = await make_rt(slow=slow, fast=cmd("ok", tmp_path))
    rt.worker.poll_interval = 0.05
    long_one = await decided(rt, "slow")
    loop = asyncio.create_task(rt.worker.run_forever())
    try:
        await asyncio.sleep(0.3)  # the slow job is running
        quick = await decided(rt, "fast")  # the decision's hook wakes the loop
        for _ in range(100):
            if (await job(rt, quick)).status is JobStatus.SUCCEEDED:
                break
            await asyncio.sleep(0.02)
        assert (await job(rt, quick)).status is JobStatus.SUCCEEDED
        assert (await job(rt, long_one)).status is JobStatus.RUNNING
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop


class _Attempts(Observer):
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, float]] = []

    def attempt(self, worker: str, result: str, seconds: float) -> None:
        self.seen.append((worker, result, seconds))


@pytest.mark.subprocess
async def test_each_attempt_reaches_the_observers(make_rt: MakeRt, tmp_path: Path) -> None:
    rt = await make_rt(agent=cmd("ok", tmp_path), flaky=cmd("fail", tmp_path))
    seen = rt.observers.add(_Attempts()).seen
    await decided(rt, "agent")
    await decided(rt, "flaky")
    await rt.worker.drain()
    assert sorted((w, r) for w, r, _ in seen) == [("agent", "succeeded"), ("flaky", "terminal")]
    assert all(s >= 0 for _, _, s in seen)


@pytest.mark.subprocess
async def test_the_lease_is_held_until_the_result_is_recorded(
    settings_factory: Callable[..., Any], clock: FakeClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step ended, its result is being written slowly: no other runner may claim the job (and
    run the step again) meanwhile, however long the write takes."""
    rt = Runtime(settings_factory(workers={"agent": cmd("ok", tmp_path)}, store={"lease": "1s"}), clock=clock)
    await rt.start(background=False)
    try:
        approval = await decided(rt, "agent")
        writing, release = asyncio.Event(), asyncio.Event()
        finish = rt.store.finish_job

        async def slow_finish(*args: Any, **kw: Any) -> bool:
            writing.set()
            await release.wait()
            return await finish(*args, **kw)

        monkeypatch.setattr(rt.store, "finish_job", slow_finish)
        task = asyncio.create_task(rt.worker.run_once())
        await asyncio.wait_for(writing.wait(), 20)
        for _ in range(4):  # 3.6 s of gateway time pass, well beyond the 1 s lease
            clock.advance(0.9)
            await asyncio.sleep(0.4)  # the renewal runs every lease/3
        assert await rt.store.claim_launches(clock.now(), "other-runner", rt.worker.lease, 10) == []
        release.set()
        assert await task == 1
        done = await job(rt, approval)
        assert done.status is JobStatus.SUCCEEDED and done.attempts == 1
    finally:
        await rt.stop()
