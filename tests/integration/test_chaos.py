"""THE chaos test: SIGKILL the worker process at a random moment of the run, 30 times.

Every run must complete, and the fake payment API must see exactly one charge per approved run
(none per rejected run), however often the worker was killed and replayed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from examples.invoice_agent.agent import Effects, invoice_run
from gateway.core.models import JobStatus, Outcome
from gateway.sdk import DurableRun, Suspended
from gateway.service.commands import Authority
from gateway.testing import FakeClock
from tests.conftest import TEST_AGENT
from tests.integration.gateway_fixture import API_KEY, start_env

pytestmark = pytest.mark.subprocess  # every test here starts a process

TRIALS = 30
KILLS_PER_RUN = 2  # the first two attempts of each run are killed at a random moment
# Seconds after the imports: shorter than one resumed run (journal load, charge, email) even on a
# quiet machine, where a run takes ~0.2 s; a timer that fires after the run ended kills nothing.
MAX_DELAY = 0.15


async def _start(url: str, payments_url: str, run_id: str, fx: Effects) -> str:
    async with await DurableRun.open(run_id, gateway_url=url, api_key=API_KEY) as run:
        try:
            await invoice_run(run, "ACME", payments_url, fx)
        except Suspended as s:
            return s.approval_id
    raise AssertionError("the run did not suspend")


async def test_sigkill_at_random_moments_never_double_charges(
    aiohttp_server: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock, tmp_path: Path
) -> None:
    started = time.monotonic()
    marks = tmp_path / "kills"
    marks.mkdir()
    env = await start_env(aiohttp_server, settings_factory, clock, tmp_path, chaos=(marks, KILLS_PER_RUN, MAX_DELAY))
    fx = Effects(None)
    run_ids = [f"chaos-{i}" for i in range(TRIALS)]
    approvals = await asyncio.gather(*(_start(env.url, env.payments_url, r, fx) for r in run_ids))
    rejected = set(approvals[::5])  # every fifth run is rejected: it must resume too, and charge nothing
    for approval_id in approvals:
        outcome = Outcome.REJECT if approval_id in rejected else Outcome.APPROVE
        await env.rt.service.decide(approval_id, outcome, "web:bob", authority=Authority.OPERATOR)

    for _ in range(KILLS_PER_RUN + 3):
        await env.rt.worker.drain()
        clock.advance(3600)  # past every retry's backoff
    jobs = {a: await env.rt.store.get_job(a) for a in approvals}
    assert {a: j.status if j else None for a, j in jobs.items()} == {a: JobStatus.SUCCEEDED for a in approvals}

    charges: dict[str, int] = {}
    for charge in env.payments.charges.values():
        charges[charge["run_id"]] = charges.get(charge["run_id"], 0) + 1
    expected = {r: 1 for r, a in zip(run_ids, approvals, strict=True) if a not in rejected}
    assert charges == expected
    for run_id in run_ids:
        steps = {s.name for s in await env.rt.store.get_steps(run_id, namespace=TEST_AGENT)}
        assert "email" in steps, run_id

    kills = 0
    for approval_id in approvals:
        errors = [e.data.get("error") for e in await env.rt.store.list_events(approval_id) if e.kind == "job_retrying"]
        kills += errors.count("killed by SIGKILL")
    replays = env.payments.requests - len(env.payments.charges)
    elapsed = time.monotonic() - started
    print(f"chaos: {TRIALS} runs, {kills} SIGKILLs landed, {replays} charge requests replayed, {elapsed:.1f}s")
    assert kills >= TRIALS // 3, kills  # the chaos really happened (most armed timers land mid-run)
    assert elapsed < 60
