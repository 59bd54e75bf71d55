"""Each framework example end to end: a real `serve`, cards on the Telegram fake, presses, and
the worker (`python -m examples.<name>.agent resume`) resuming the framework's own pause.

For every framework: approve (the effect runs once, the job succeeds), reject (the framework
sees its own rejected form, the effect never runs), two parallel calls in one step (one approval
each, one resume once both are decided), and a kill -9 between the effect and its journal entry
(the retry charges nothing more)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.frameworks.conftest import StackFactory
from tests.frameworks.stack import Stack
from tests.telegram.conftest import ALICE

pytestmark = pytest.mark.subprocess
REJECTED = f"Rejected by telegram:{ALICE}"


@dataclass(frozen=True)
class Case:
    module: str
    worker: str
    rejected: str  # how the framework words a rejected call back to the model
    args: tuple[str, ...] = ()

    def stack(self, factory: StackFactory, tmp: Path) -> Stack:
        args = [a.replace("{tmp}", str(tmp)) for a in self.args]
        return factory(f"examples.{self.module}.agent", self.worker, *args)


LANGCHAIN_REJECTED = f"User rejected the tool call for `pay_invoice` with reason: {REJECTED}"
CASES = {
    # the SDK sends rejection_message to the model as the tool's output
    "openai-agents": Case("openai_agents", "openai-agents", REJECTED),
    # ToolDenied(message=...) is the tool return the model reads
    "pydantic-ai": Case("pydantic_ai_agent", "pydantic-ai", REJECTED),
    # HumanInTheLoopMiddleware's reject decision becomes an error ToolMessage
    "langgraph-per-call": Case(
        "langgraph_agent",
        "langgraph",
        LANGCHAIN_REJECTED,
        ("--interrupt-mode", "per_call", "--checkpoints", "{tmp}/cp.sqlite"),
    ),
    "langgraph-batched": Case(
        "langgraph_agent",
        "langgraph",
        LANGCHAIN_REJECTED,
        ("--interrupt-mode", "batched", "--checkpoints", "{tmp}/cp.sqlite"),
    ),
}
cases = pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))


async def _result(s: Stack, run_id: str) -> list[str]:
    """The resumed run's final answer: the scripted model lists every tool result."""
    steps = await s.steps(run_id)
    [resumed] = [v for k, v in steps.items() if k.startswith("resumed:")]
    text = str(resumed["output"]["result"])
    assert text.startswith("Done. "), text
    return sorted(text.removeprefix("Done. ").split(" | "))


@cases
async def test_approve_runs_the_effect_once(case: Case, stack: StackFactory, tmp_path: Path) -> None:
    s = case.stack(stack, tmp_path).serve()
    await s.start("r-1")
    [approval] = await s.approvals("r-1", 1)
    assert approval["step"].startswith("pay_invoice:")
    assert approval["args"] == {"invoice": "INV-1", "amount": 4200}
    assert s.charge_attempts() == []  # nothing ran before the decision
    await s.press(approval, "Approve")
    job = await s.job(approval["id"])
    assert job["attempts"] == 1
    assert s.charges() == {"INV-1": 1}
    assert await _result(s, "r-1") == ["charged INV-1 4200 as ch_1"]
    assert (await s.steps("r-1"))["charge:INV-1"]["status"] == "succeeded"


@cases
async def test_reject_reaches_the_framework_and_nothing_is_charged(
    case: Case, stack: StackFactory, tmp_path: Path
) -> None:
    s = case.stack(stack, tmp_path).serve()
    await s.start("r-2")
    [approval] = await s.approvals("r-2", 1)
    await s.press(approval, "Reject")
    await s.job(approval["id"])
    assert s.charge_attempts() == [] and s.charges() == {}
    assert await _result(s, "r-2") == [case.rejected]


@cases
async def test_two_parallel_calls_resume_once_both_are_decided(case: Case, stack: StackFactory, tmp_path: Path) -> None:
    s = case.stack(stack, tmp_path).serve()
    await s.start("r-3", "INV-1:4200,INV-2:1500")
    first, second = await s.approvals("r-3", 2)
    assert {first["args"]["invoice"], second["args"]["invoice"]} == {"INV-1", "INV-2"}
    await s.press(first, "Approve")
    await s.job(first["id"])  # its worker ran and found the other call undecided: nothing happened
    assert s.charges() == {}
    assert not [k for k in await s.steps("r-3") if k.startswith("resumed:")]
    await s.press(second, "Reject")
    await s.job(second["id"])
    approved = first["args"]["invoice"]
    assert s.charges() == {approved: 1}
    assert await _result(s, "r-3") == sorted([f"charged {approved} {first['args']['amount']} as ch_1", case.rejected])


@cases
async def test_kill_9_between_the_charge_and_its_journal_entry_charges_once(
    case: Case, stack: StackFactory, tmp_path: Path
) -> None:
    s = case.stack(stack, tmp_path).serve(kill_between="charge:")
    await s.start("r-4")
    [approval] = await s.approvals("r-4", 1)
    await s.press(approval, "Approve")
    job = await s.job(approval["id"])
    assert job["attempts"] == 2  # the first attempt was killed right after the charge
    assert s.charge_attempts() == ["charge INV-1 4200"] * 2  # the retry asked again...
    assert s.charges() == {"INV-1": 1} and s.payments.requests == 2  # ...with the same key: one charge
    assert await _result(s, "r-4") == ["charged INV-1 4200 as ch_1"]
