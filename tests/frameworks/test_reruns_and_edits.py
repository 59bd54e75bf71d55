"""Framework pauses against a real `serve`, driven by `tests/frameworks/fresh_agents.py` (the
examples with a model that gives its tool calls new ids on every run, as a real one does):

- a `start` SIGKILLed right after its first approval, then run again, makes no second approval
  for the same tool call, and each effect runs once after the decisions;
- an operator's approve with edited args (`POST /v1/approvals/{id}/decision` with `args`)
  reaches the framework as its own edit: LangGraph's `edit` decision, Pydantic AI's
  `ToolApproved(override_args=...)`; the OpenAI Agents SDK, which has no edit, gets a rejection
  that names the approved args, and nothing runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hitl_sdk.pause import rejection_for_edit

from tests.frameworks.conftest import StackFactory
from tests.frameworks.stack import Stack
from tests.procs import OPERATOR

pytestmark = pytest.mark.subprocess
MODULE = "tests.frameworks.fresh_agents"


@dataclass(frozen=True)
class Fw:
    name: str
    args: tuple[str, ...] = ()

    def stack(self, factory: StackFactory, tmp: Path, *more: str) -> Stack:
        args = [a.replace("{tmp}", str(tmp)) for a in self.args]
        return factory(MODULE, "fresh", "--framework", self.name, *args, *more)


FRAMEWORKS = {
    "langgraph": Fw("langgraph", ("--checkpoints", "{tmp}/cp.sqlite")),
    "langgraph-batched": Fw("langgraph", ("--checkpoints", "{tmp}/cp.sqlite", "--interrupt-mode", "batched")),
    "pydantic-ai": Fw("pydantic-ai"),
    "openai-agents": Fw("openai-agents"),
}


async def _result(s: Stack, run_id: str) -> list[str]:
    """The resumed run's final answer (the scripted models list every tool result)."""
    [resumed] = [v for k, v in (await s.steps(run_id)).items() if k.startswith("resumed:")]
    text = str(resumed["output"]["result"])
    assert text.startswith("Done. "), text
    return sorted(text.removeprefix("Done. ").split(" | "))


async def _all_approvals(s: Stack, run_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (await s.get(f"/v1/approvals?run_id={run_id}"))["items"]
    return items


@pytest.mark.parametrize("fw", list(FRAMEWORKS.values()), ids=list(FRAMEWORKS))
async def test_a_start_killed_after_its_first_approval_and_run_again_asks_once_per_call(
    fw: Fw, stack: StackFactory, tmp_path: Path
) -> None:
    s = fw.stack(stack, tmp_path).serve()
    code, text = await s.start_process("rerun", "INV-1:4200,INV-2:1500", "--die-after", "1")
    assert code == -9, text  # killed half-way: one approval made, the other not
    assert len(await _all_approvals(s, "rerun")) == 1
    await s.start("rerun", "INV-1:4200,INV-2:1500")  # the same start again: its calls have new ids
    made = await _all_approvals(s, "rerun")
    assert sorted(a["args"]["invoice"] for a in made) == ["INV-1", "INV-2"], made  # one per tool call
    first, second = await s.approvals("rerun", 2)
    await s.press(first, "Approve")
    await s.job(first["id"])
    await s.press(second, "Approve")
    await s.job(second["id"])
    assert sorted(s.charge_attempts()) == ["charge INV-1 4200", "charge INV-2 1500"]
    assert s.charges() == {"INV-1": 1, "INV-2": 1}
    receipts = [r.rsplit(" as ", 1)[0] for r in await _result(s, "rerun")]
    assert receipts == ["charged INV-1 4200", "charged INV-2 1500"]
    assert len(await _all_approvals(s, "rerun")) == 2


EDITED = {"invoice": "INV-1", "amount": 3900}


async def _approve_edited(s: Stack, run_id: str) -> dict[str, Any]:
    """An operator approves over the HTTP API with the amount changed from 4200 to 3900."""
    [approval] = await s.approvals(run_id, 1)
    assert approval["editable"] == ["amount"], approval
    body = {"outcome": "approve", "args": EDITED, "comment": "pay the agreed 39.00"}
    async with s.http.post(f"{s.url}/v1/approvals/{approval['id']}/decision", json=body, headers=OPERATOR) as r:
        assert r.status == 200, await r.text()
    return await s.job(approval["id"])


@pytest.mark.parametrize("fw", [FRAMEWORKS["langgraph"], FRAMEWORKS["pydantic-ai"]], ids=["langgraph", "pydantic-ai"])
async def test_an_approve_with_edited_args_runs_the_tool_with_them(fw: Fw, stack: StackFactory, tmp_path: Path) -> None:
    s = fw.stack(stack, tmp_path, "--editable", "pay_invoice:amount").serve()
    await s.start("edit")
    await _approve_edited(s, "edit")
    assert s.charge_attempts() == ["charge INV-1 3900"]
    assert [(c["run_id"], c["amount"]) for c in s.payments.charges.values()] == [("INV-1", 3900)]
    [result] = await _result(s, "edit")  # LangChain prefixes a note that the call was edited
    assert result.endswith("charged INV-1 3900 as ch_1"), result


async def test_openai_agents_has_no_edit_so_an_edit_is_a_rejection_naming_the_approved_args(
    stack: StackFactory, tmp_path: Path
) -> None:
    s = FRAMEWORKS["openai-agents"].stack(stack, tmp_path, "--editable", "pay_invoice:amount").serve()
    await s.start("edit")
    await _approve_edited(s, "edit")
    assert s.charge_attempts() == [] and s.charges() == {}  # the call as the model made it never ran
    assert await _result(s, "edit") == [rejection_for_edit("pay_invoice", EDITED)]
