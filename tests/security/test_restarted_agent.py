"""What runs after an edited approve, when the agent itself learns the decision (restarted
with its run id, or reaching a sibling approval's step from another approval's worker): the
approved args raw, as the worker's document gives them, never the approval's API view, whose
args are redacted for the approvers (an e-mail there reads '[redacted:email]')."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from examples.invoice_agent.agent import Effects, invoice_run
from gateway.sdk import DurableRun, GatewayClient
from gateway.testing import TEST_OPERATOR_KEY, FakeClock
from tests.conftest import TEST_AGENT
from tests.integration.gateway_fixture import API_KEY, start_env, started_invoice

pytestmark = pytest.mark.subprocess  # every test here starts a process


async def test_an_agent_restarted_after_an_edited_approve_runs_the_raw_args_not_the_redacted_view(
    aiohttp_server: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock, tmp_path: Path
) -> None:
    """No worker document this time: the agent itself runs again (restarted with its run id)
    after the approver lowered the amount. The decision it learns carries the approved args raw
    (the e-mail the agent gave), not the approval's API view, where the e-mail is redacted."""
    env = await start_env(aiohttp_server, settings_factory, clock, tmp_path)
    approval_id = await started_invoice(env, "inv-5")
    async with GatewayClient(env.url, TEST_OPERATOR_KEY) as client:
        read = await client.get(approval_id)
        assert read["args"]["email"] == "[redacted:email]"
        await client.decide(approval_id, "approve", args={**read["args"], "amount": 3900})
    async with await DurableRun.open("inv-5", gateway_url=env.url, api_key=API_KEY) as run:
        await invoice_run(run, "ACME", env.payments_url, Effects(str(env.effects)))
    journal = {s.name: s for s in await env.rt.store.get_steps("inv-5", namespace=TEST_AGENT)}
    assert journal["approval"].output["args"] == {**read["args"], "amount": 3900, "email": "billing@acme.test"}
    assert journal["email"].output["to"] == "billing@acme.test"
    assert [(c["amount"], c["run_id"]) for c in env.payments.charges.values()] == [(3900, "inv-5")]


async def test_an_agent_restarted_past_the_first_tokens_life_still_learns_its_decision(
    aiohttp_server: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock, tmp_path: Path
) -> None:
    """The fifth review's #3: the suspend's token lives 30 days (no deadline here); a replay on
    the decided approval hands out a fresh one, as a worker's, so the run ends on its reject path
    instead of a 410 token_expired."""
    env = await start_env(aiohttp_server, settings_factory, clock, tmp_path)
    approval_id = await started_invoice(env, "inv-6")
    async with GatewayClient(env.url, TEST_OPERATOR_KEY) as client:
        await client.decide(approval_id, "reject", comment="not this month")
    clock.advance(31 * 86400)
    async with await DurableRun.open("inv-6", gateway_url=env.url, api_key=API_KEY) as run:
        await invoice_run(run, "ACME", env.payments_url, Effects(str(env.effects)))
    journal = {s.name: s for s in await env.rt.store.get_steps("inv-6", namespace=TEST_AGENT)}
    assert journal["approval"].output["outcome"] == "reject"
    assert journal["email"].output["body"].startswith("Not charged") and env.payments.charges == {}
