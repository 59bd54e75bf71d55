"""The framework adapters under a real `serve`, each driven offline: the AI SDK
(sdk-ts/examples/ai-sdk.mjs, its own MockLanguageModelV3), the OpenAI Agents SDK for JavaScript
(sdk-ts/examples/openai-agents.mjs, a scripted `Model`; the RunState is the suspended state) and
Mastra (sdk-ts/examples/mastra.mjs, the AI SDK 5 MockLanguageModelV2; the run's workflow
snapshots are the suspended state). A tool call that needs approval becomes an approval, and the
worker resumes the framework after the decision: approve, reject (with the reason the model
reads, where the framework carries one), edit (the tool runs with the approved input), a policy
timeout, two calls in one step, and a kill -9 between the charge and its journal entry."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.typescript.node import SDK
from tests.typescript.stack import TsStack

pytestmark = pytest.mark.subprocess


@dataclass(frozen=True)
class Framework:
    example: str
    step: str  # the approval's step for invoice INV-1
    rejected: str | None = None  # what the model reads of any rejection; None: the reason itself


MASTRA_DECLINED = "Tool call was not approved by the user"  # Mastra's decline takes no reason
FRAMEWORKS = {
    "ai-sdk": Framework("ai-sdk.mjs", "pay_invoice:call-1"),
    "openai-agents": Framework("openai-agents.mjs", "pay_invoice:call_INV-1"),
    "mastra": Framework("mastra.mjs", "payInvoice:call-1", MASTRA_DECLINED),
}


@pytest.fixture(params=list(FRAMEWORKS))
def ai(ts: TsStack, request: pytest.FixtureRequest) -> TsStack:
    ts.example, ts.worker = SDK / "examples" / FRAMEWORKS[request.param].example, request.param
    return ts


def rejected(s: TsStack, reason: str) -> str:
    return FRAMEWORKS[s.worker].rejected or reason


async def answer(s: TsStack, run_id: str) -> list[str]:
    text = str((await s.steps(run_id))["answer"]["output"])
    assert text.startswith("Done. "), text
    return sorted(text.removeprefix("Done. ").split(" | "))


async def test_approve(ai: TsStack) -> None:
    ai.serve()
    await ai.start("ai-1")
    approval = await ai.approval("ai-1")
    assert approval["step"] == FRAMEWORKS[ai.worker].step and approval["args"] == {
        "invoice": "INV-1",
        "amount": 4200,
    }
    assert approval["title"] == "Pay INV-1: 4200"
    await ai.decide(approval["id"], "approve")
    assert (await ai.job(approval["id"]))["attempts"] == 1
    assert await answer(ai, "ai-1") == ["charged INV-1 4200 as ch_1"]
    assert ai.attempts() == ["charge INV-1 4200"]


async def test_reject_carries_the_reason_to_the_model(ai: TsStack) -> None:
    ai.serve()
    await ai.start("ai-2")
    approval = await ai.approval("ai-2")
    await ai.decide(approval["id"], "reject", comment="not this month")
    await ai.job(approval["id"])
    assert await answer(ai, "ai-2") == [rejected(ai, "not this month")]
    assert ai.attempts() == [] and ai.payments.requests == 0


async def test_an_edit_is_the_input_the_tool_runs_with(ai: TsStack) -> None:
    ai.serve()
    await ai.start("ai-3")
    approval = await ai.approval("ai-3")
    await ai.decide(approval["id"], "approve", args={"invoice": "INV-1", "amount": 3000})
    await ai.job(approval["id"])
    assert await answer(ai, "ai-3") == ["charged INV-1 3000 as ch_1"]


async def test_a_timeout_is_a_rejection_the_model_reads(ai: TsStack) -> None:
    ai.serve()
    await ai.start("ai-4", "--timeout", "1s")
    approval = await ai.approval("ai-4")
    await ai.job(approval["id"], within=30)
    [said] = await answer(ai, "ai-4")
    assert said == rejected(
        ai, "No decision within the deadline: reject by policy (policy 'inline': no decision after 1 s)"
    )
    assert ai.payments.requests == 0


async def test_two_calls_resume_once_both_are_decided(ai: TsStack) -> None:
    ai.serve()
    await ai.start("ai-5", "--invoices", "INV-1:4200,INV-2:1500")
    first, second = await ai.approvals("ai-5")
    await ai.decide(first["id"], "approve")
    await ai.job(first["id"])  # its worker found the other call undecided: nothing ran
    assert "answer" not in await ai.steps("ai-5") and ai.payments.requests == 0
    await ai.decide(second["id"], "reject", comment="duplicate")
    await ai.job(second["id"])
    assert await answer(ai, "ai-5") == sorted(
        [f"charged {first['args']['invoice']} {first['args']['amount']} as ch_1", rejected(ai, "duplicate")]
    )


async def test_kill_9_between_the_charge_and_its_journal_entry_charges_once(ai: TsStack) -> None:
    ai.serve(kill_step="charge:INV-1")
    await ai.start("ai-6")
    approval = await ai.approval("ai-6")
    await ai.decide(approval["id"], "approve")
    assert (await ai.job(approval["id"]))["attempts"] == 2
    assert ai.attempts() == ["charge INV-1 4200"] * 2 and ai.payments.requests == 2
    assert len(ai.payments.charges) == 1
    assert await answer(ai, "ai-6") == ["charged INV-1 4200 as ch_1"]
