"""The OpenAI Agents SDK example end to end: a real `serve`, cards on the Telegram fake, presses,
the worker (`python -m examples.openai_agents.agent resume`) continuing the RunState."""

from __future__ import annotations

import pytest

from tests.frameworks.conftest import StackFactory
from tests.telegram.conftest import ALICE

pytestmark = pytest.mark.slow
MODULE, WORKER = "examples.openai_agents.agent", "openai-agents"


async def test_approve_runs_the_effect_once(stack: StackFactory) -> None:
    s = stack(MODULE, WORKER).serve()
    await s.start("oa-1")
    [approval] = await s.approvals("oa-1", 1)
    assert approval["step"] == "pay_invoice:call_INV-1"
    assert approval["args"] == {"invoice": "INV-1", "amount": 4200}
    assert s.charge_attempts() == []  # nothing ran before the decision
    await s.press(approval, "Approve")
    job = await s.job(approval["id"])
    assert job["attempts"] == 1
    assert s.charges() == {"INV-1": 1}
    steps = await s.steps("oa-1")
    assert steps["charge:INV-1"]["status"] == "succeeded"
    assert steps[f"resumed:{_pause(steps)}"]["output"]["result"] == "Done. charged INV-1 4200 as ch_1"


async def test_reject_reaches_the_model_and_nothing_is_charged(stack: StackFactory) -> None:
    s = stack(MODULE, WORKER).serve()
    await s.start("oa-2")
    [approval] = await s.approvals("oa-2", 1)
    await s.press(approval, "Reject")
    await s.job(approval["id"])
    assert s.charge_attempts() == [] and s.charges() == {}
    steps = await s.steps("oa-2")
    # the SDK's own rejected form: the rejection_message is the tool's output the model reads
    assert steps[f"resumed:{_pause(steps)}"]["output"]["result"] == f"Done. Rejected by telegram:{ALICE}"


async def test_two_parallel_calls_resume_once_both_are_decided(stack: StackFactory) -> None:
    s = stack(MODULE, WORKER).serve()
    await s.start("oa-3", "INV-1:4200,INV-2:1500")
    first, second = await s.approvals("oa-3", 2)
    await s.press(first, "Approve")
    await s.job(first["id"])  # its worker ran and found the other call undecided
    assert s.charges() == {}
    await s.press(second, "Reject")
    await s.job(second["id"])
    assert s.charges() == {"INV-1": 1}
    steps = await s.steps("oa-3")
    result = steps[f"resumed:{_pause(steps)}"]["output"]["result"]
    assert result == f"Done. charged INV-1 4200 as ch_1 | Rejected by telegram:{ALICE}"


async def test_kill_9_between_the_charge_and_its_journal_entry_charges_once(stack: StackFactory) -> None:
    s = stack(MODULE, WORKER).serve(kill_between="charge:")
    await s.start("oa-4")
    [approval] = await s.approvals("oa-4", 1)
    await s.press(approval, "Approve")
    job = await s.job(approval["id"])
    assert job["attempts"] == 2  # the first attempt was killed after the charge
    assert s.charge_attempts() == ["charge INV-1 4200", "charge INV-1 4200"]  # the retry asked again...
    assert s.charges() == {"INV-1": 1} and s.payments.requests == 2  # ...with the same key: one charge


def _pause(steps: dict[str, dict[str, object]]) -> str:
    [name] = [n for n in steps if n.startswith("resumed:")]
    return name.removeprefix("resumed:")
