"""A rule's decision through the durable SDK: with a worker, the run exits and the resume job runs
the step once (never both); without one, the run goes on at once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from examples.invoice_agent.agent import Effects, invoice_run
from gateway.core.models import JobStatus, Outcome, Source
from gateway.sdk import DurableRun, Suspended
from gateway.testing import FakeClock
from tests.integration.gateway_fixture import API_KEY, start_env

pytestmark = pytest.mark.subprocess  # the resume job is a real worker process

ALLOW_INVOICES = [{"name": "invoices", "when": 'step == "approval"', "then": "allow", "reason": "trusted customer"}]


def with_rules(settings_factory: Callable[..., Any]) -> Callable[..., Any]:
    return lambda **sections: settings_factory(**sections, rule=ALLOW_INVOICES)


async def test_an_allowed_step_with_a_worker_runs_once_in_its_resume_job(
    aiohttp_server: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock, tmp_path: Path
) -> None:
    env = await start_env(aiohttp_server, with_rules(settings_factory), clock, tmp_path)
    async with await DurableRun.open("inv-r", gateway_url=env.url, api_key=API_KEY) as run:
        with pytest.raises(Suspended) as suspended:  # decided, but the worker runs it: this run exits
            await invoice_run(run, "ACME", env.payments_url, Effects(str(env.effects)))
    approval = await env.rt.service.get(suspended.value.approval_id)
    assert approval.decision is not None and approval.decision.decided_by == "rule:invoices"
    await env.rt.worker.drain()
    job = await env.rt.store.get_job(approval.id)
    assert job is not None and job.status is JobStatus.SUCCEEDED, job
    assert env.effects.read_text().split() == ["research", "validate", "draft", "charge", "email"]
    assert [c["run_id"] for c in env.payments.charges.values()] == ["inv-r"]  # charged once


async def test_an_allowed_step_without_a_worker_goes_on_at_once(
    aiohttp_server: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock, tmp_path: Path
) -> None:
    env = await start_env(aiohttp_server, with_rules(settings_factory), clock, tmp_path)
    async with await DurableRun.open("inline", gateway_url=env.url, api_key=API_KEY) as run:
        decision = await run.approval("approval", title="Charge ACME", args={"amount": 100})
    assert (decision.outcome, decision.source, decision.decided_by) == (Outcome.APPROVE, Source.RULE, "rule:invoices")
