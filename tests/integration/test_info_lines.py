"""What an approval's life writes at the default log level: a few lines, one per step an operator
follows (suspended, decided, its job's outcome). Each card post, sync and job attempt is in the
audit trail and at DEBUG: per-cycle INFO lines cost 12-19% of a cycle's CPU (docs/performance.md)."""

from __future__ import annotations

import logging

import pytest

from gateway.core.models import JobStatus, Outcome
from gateway.runtime import Runtime
from gateway.service import SuspendRequest, new_id
from gateway.service.commands import Authority


@pytest.mark.subprocess  # the `agent` worker is a real command
async def test_an_approvals_life_at_info_is_three_gateway_lines(
    runtime: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gateway")
    req = SuspendRequest(run_id=f"run-{new_id()}", step="s", title="t", worker="agent", channels=["web"])
    approval, _ = await runtime.service.suspend(req)
    await runtime.outbox.drain()
    await runtime.service.decide(approval.id, Outcome.APPROVE, "operator:ops", authority=Authority.OPERATOR)
    await runtime.outbox.drain()
    assert await runtime.worker.drain() == 1
    job = await runtime.store.get_job(approval.id)
    assert job is not None and job.status is JobStatus.SUCCEEDED
    kinds = {e.kind for e in await runtime.store.list_events(approval.id)}
    assert {"card_posted", "card_synced", "job_started", "job_succeeded"} <= kinds  # all in the trail
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("gateway") and r.levelno == logging.INFO]
    assert len(lines) == 3, lines
    suspended, decided, outcome = lines
    assert f"approval {approval.id} suspended" in suspended
    assert f"approval {approval.id} approved by operator:ops" in decided
    assert outcome == f"resume job {job.id} (approval {approval.id}) job_succeeded on agent, attempt 1: ok"
