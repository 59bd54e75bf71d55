"""Pydantic AI: a run that ends with `DeferredToolRequests` has each approval request become a
gateway approval; the message history (`ModelMessagesTypeAdapter`) goes into their sealed state,
and the gateway's worker answers with `DeferredToolResults` and continues the run.

    agent = Agent(model, output_type=[str, DeferredToolRequests])
    gate = PydanticAIApprovals(run, worker="payments", channels=["telegram:-100123"])
    result = await agent.run("Pay the open invoices", deps=deps)
    output = await gate.settle(result)          # raises Suspended on DeferredToolRequests
    # in the worker (`python -m my_agent resume`):
    output = await gate.resume(agent, deps=deps)   # Waiting, Suspended (paused again), or output

Approve is `ToolApproved()`, approve with edits `ToolApproved(override_args=...)`, reject
`ToolDenied(message=<the reason>)`.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.messages import ModelMessagesTypeAdapter
from pydantic_ai.run import AgentRunResult

from hitl_sdk.integrations._common import Gate
from hitl_sdk.pause import PendingCall, Resumed, UnsupportedRequest

__all__ = ["PydanticAIApprovals", "deferred_results"]


def deferred_results(resumed: Resumed) -> DeferredToolResults:
    """The answers to a pause: `ToolApproved` (with `override_args` when edited) or `ToolDenied`."""
    approvals: dict[str, bool | ToolApproved | ToolDenied] = {}
    for call in resumed.calls:
        decision = resumed.decision(call)
        if decision.approved:
            approvals[call.key] = ToolApproved(override_args=decision.edited_args)
        else:
            approvals[call.key] = ToolDenied(message=decision.reason_text())
    return DeferredToolResults(approvals=approvals)


class PydanticAIApprovals(Gate):
    """The run's deferred approvals as gateway approvals (one per call), its continuation in
    the worker."""

    async def settle(self, result: AgentRunResult[Any]) -> Any:
        """`result.output` unless it is `DeferredToolRequests`: then one approval per request,
        the history in their sealed state, and `Suspended`. External deferred calls (`calls`)
        are not approvals: `UnsupportedRequest`."""
        out = result.output
        if not isinstance(out, DeferredToolRequests):
            return out
        if out.calls:
            names = ", ".join(c.tool_name for c in out.calls)
            raise UnsupportedRequest(f"deferred external tool calls ({names}) are not approvals")
        calls = [
            PendingCall(
                c.tool_call_id, c.tool_name, c.args_as_dict(), meta={"metadata": out.metadata.get(c.tool_call_id)}
            )
            for c in out.approvals
        ]
        history = ModelMessagesTypeAdapter.dump_python(result.all_messages(), mode="json")
        await self.pause.suspend(calls, {"messages": history})

    async def resume(self, agent: Agent[Any, Any], **run: Any) -> Any:
        """In the worker: once every call is decided, continue the run with the history and the
        `DeferredToolResults`, exactly once. `run`: more `agent.run` arguments (e.g. `deps=`).
        Returns `output(result.output)`."""
        resumed = await self.pause.collect()

        async def go() -> Any:
            history = ModelMessagesTypeAdapter.validate_python(resumed.state["messages"])
            result = await agent.run(message_history=history, deferred_tool_results=deferred_results(resumed), **run)
            return self.output(await self.settle(result))

        return await self.pause.complete(resumed, go)
