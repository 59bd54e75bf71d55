"""The durable SDK across a real suspend and a real worker resume (a subprocess)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hitl_sdk import GatewayHTTPError

from examples.invoice_agent.agent import Effects, invoice_run
from gateway.core.models import JobStatus, StepStatus
from gateway.sdk import DurableRun, GatewayClient, Suspended
from gateway.testing import TEST_OPERATOR_KEY, FakeClock
from tests.conftest import TEST_AGENT
from tests.integration.gateway_fixture import API_KEY, start_env, started_invoice

pytestmark = pytest.mark.subprocess  # every test here starts a process


async def test_steps_before_the_approval_run_exactly_once(
    aiohttp_server: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock, tmp_path: Path
) -> None:
    env = await start_env(aiohttp_server, settings_factory, clock, tmp_path)
    fx = Effects(str(env.effects))
    for _ in range(2):  # the agent started twice before anyone decides: replay, same approval
        store_url = env.rt.settings.store.url  # the journal read and written in the store directly
        async with await DurableRun.open(
            "inv-1", gateway_url=env.url, api_key=API_KEY, db_url=store_url, agent=TEST_AGENT
        ) as run:
            with pytest.raises(Suspended) as suspended:
                await invoice_run(run, "ACME", env.payments_url, fx)
    assert env.effects.read_text().split() == ["research", "validate", "draft"]
    approvals = await env.rt.store.list_approvals(run_id="inv-1")
    assert [a.id for a in approvals] == [suspended.value.approval_id]
    steps = {s.name: s.status for s in await env.rt.store.get_steps("inv-1", namespace=TEST_AGENT)}
    assert steps == {
        "research": StepStatus.SUCCEEDED,
        "validate": StepStatus.SUCCEEDED,
        "draft": StepStatus.SUCCEEDED,
        "approval": StepStatus.SUSPENDED,
    }
    async with GatewayClient(env.url, TEST_OPERATOR_KEY) as client:  # an operator decides, as itself
        await client.decide(suspended.value.approval_id, "approve", "web:bob")
    await env.rt.worker.drain()
    job = await env.rt.store.get_job(suspended.value.approval_id)
    assert job is not None and job.status is JobStatus.SUCCEEDED, job
    assert env.effects.read_text().split() == ["research", "validate", "draft", "charge", "email"]
    assert [c["run_id"] for c in env.payments.charges.values()] == ["inv-1"]
    journal = {s.name: s for s in await env.rt.store.get_steps("inv-1", namespace=TEST_AGENT)}
    assert journal["approval"].status is StepStatus.SUCCEEDED
    assert journal["approval"].output["outcome"] == "approve"
    assert journal["email"].output["body"].endswith("Charged as ch_1.")


async def test_rejection_resumes_and_compensates(
    aiohttp_server: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock, tmp_path: Path
) -> None:
    env = await start_env(aiohttp_server, settings_factory, clock, tmp_path)
    async with await DurableRun.open("inv-2", gateway_url=env.url, api_key=API_KEY) as run:  # HTTP journal
        with pytest.raises(Suspended) as suspended:
            await invoice_run(run, "ACME", env.payments_url, Effects(str(env.effects)))
    await env.rt.service.cancel(suspended.value.approval_id, "operator:api", "customer left")
    await env.rt.worker.drain()
    assert env.effects.read_text().split() == ["research", "validate", "draft", "email"]
    assert env.payments.charges == {}
    journal = {s.name: s for s in await env.rt.store.get_steps("inv-2", namespace=TEST_AGENT)}
    assert journal["email"].output["body"] == "Not charged (operator:api)."


async def test_an_approval_with_changes_charges_the_edited_amount_exactly_once(
    aiohttp_server: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock, tmp_path: Path
) -> None:
    """The example's approver lowers the amount: the worker charges 3900, once, with a key derived
    from the approved args (a second drain charges nothing more)."""
    env = await start_env(aiohttp_server, settings_factory, clock, tmp_path)
    approval_id = await started_invoice(env, "inv-3")
    async with GatewayClient(env.url, TEST_OPERATOR_KEY) as client:
        read = await client.get(approval_id)
        shown = read["args"]  # the e-mail is redacted here: kept raw underneath
        too_much = {**shown, "amount": 2_000_000}
        with pytest.raises(GatewayHTTPError) as refused:
            await client.decide(approval_id, "approve", args=too_much)
        assert refused.value.status == 400 and "args.amount" in refused.value.message
        with pytest.raises(GatewayHTTPError) as stale:  # bound to args it never read
            await client.decide(approval_id, "approve", args={**shown, "amount": 3900}, args_hash="0" * 64)
        assert stale.value.status == 409 and stale.value.code == "stale_round"
        await client.decide(approval_id, "approve", args={**shown, "amount": 3900}, args_hash=read["current_args_hash"])
    await env.rt.worker.drain()
    await env.rt.worker.drain()
    assert [(c["amount"], c["run_id"]) for c in env.payments.charges.values()] == [(3900, "inv-3")]
    assert env.effects.read_text().split().count("charge") == 1
    journal = {s.name: s for s in await env.rt.store.get_steps("inv-3", namespace=TEST_AGENT)}
    decision = journal["approval"].output
    assert decision["args"]["amount"] == 3900 and decision["original_args"]["amount"] == 4200
    assert decision["args"]["email"] == "billing@acme.test"  # raw in the worker's document
    assert journal["email"].output["to"] == "billing@acme.test"
