"""OpenAI Agents SDK: a run's `interruptions` become gateway approvals, its `RunState` goes into
their sealed state, and the gateway's worker approves or rejects each call and continues the run.

    gate = AgentsApprovals(run, worker="payments", channels=["telegram:-100123"])
    result = await Runner.run(agent, "Pay the open invoices")
    output = await gate.settle(result)      # raises Suspended when the run stopped for approvals
    # in the worker (`python -m my_agent resume`):
    output = await gate.resume(agent)       # Waiting, Suspended (paused again), or final_output

A rejection reaches the model as `rejection_message` (the approver's reason). The SDK cannot run
a call with other arguments than the model's: an approval with edits is a rejection whose
message names the approved arguments (`hitl_sdk.pause.rejection_for_edit`).
"""

from __future__ import annotations

import json
from typing import Any

from agents import Agent, Runner, RunResult, RunState
from agents.items import ToolApprovalItem

from hitl_sdk.integrations._common import Gate
from hitl_sdk.pause import PendingCall, Resumed, rejection_for_edit

__all__ = ["AgentsApprovals"]


def _call(item: ToolApprovalItem) -> PendingCall:
    raw = item.arguments or "{}"
    try:
        args = json.loads(raw)
    except ValueError:
        args = {"arguments": raw}  # the model's text as it was: the card shows it, nothing runs it
    if not isinstance(args, dict):
        args = {"arguments": args}
    if not item.call_id:
        raise ValueError(f"the interrupted call of {item.name} has no call id")
    return PendingCall(str(item.call_id), str(item.name or "tool"), args, meta={"agent": item.agent.name})


def _answer(state: RunState[Any, Any], resumed: Resumed) -> None:
    pending = {str(i.call_id): i for i in state.get_interruptions()}
    for call in resumed.calls:
        item, decision = pending[call.key], resumed.decision(call)
        edited = decision.edited_args
        if decision.approved and edited is None:
            state.approve(item)
        else:
            message = rejection_for_edit(call.tool, edited) if edited is not None else decision.reason_text()
            state.reject(item, rejection_message=message)


class AgentsApprovals(Gate):
    """The run's interruptions as approvals (one per call), its continuation in the worker.
    `state_options` go to `RunState.to_json` (e.g. `context_serializer=`)."""

    async def settle(self, result: RunResult, **state_options: Any) -> Any:
        """`result.final_output` if the run finished; else one approval per interruption, the
        serialized RunState in their sealed state, and `Suspended`."""
        if not result.interruptions:
            return result.final_output
        calls = [_call(i) for i in result.interruptions]
        await self.pause.suspend(calls, {"run_state": result.to_state().to_json(**state_options)})

    async def resume(self, agent: Agent[Any], *, state_options: dict[str, Any] | None = None, **run: Any) -> Any:
        """In the worker: once every call of the pause is decided, load the RunState (with
        `state_options`, e.g. `context_override=`), approve or reject each call and run on,
        exactly once. `run`: more `Runner.run` arguments. Returns `output(final_output)`."""
        resumed = await self.pause.collect()

        async def go() -> Any:
            state = await RunState.from_json(agent, resumed.state["run_state"], **(state_options or {}))
            _answer(state, resumed)
            result = await Runner.run(agent, state, **run)
            return self.output(await self.settle(result))

        return await self.pause.complete(resumed, go)
