"""LangGraph: a graph's human-in-the-loop interrupts become gateway approvals; the gateway's
worker resumes the graph from the paused checkpoint with `Command(resume={interrupt id: ...})`.

    gate = LangGraphApprovals(run, worker="payments", channels=["telegram:-100123"])
    out = await graph.ainvoke(inputs, config, version="v2")
    value = await gate.settle(graph, config, out)   # raises Suspended when the graph interrupted
    # in the worker (`python -m my_agent resume`), with the same checkpointer reopened:
    value = await gate.resume(graph, config)        # Waiting, Suspended (paused again), or the output

The requests understood and the answers sent are in `hitl_sdk.integrations.langgraph_requests`.
The resume always starts from the checkpoint the graph paused at (not the thread's latest), so a
worker killed mid-resume and run again replays the same step: effects inside it must be journaled
`run.step`s with `run.idempotency_key`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.types import Command, Interrupt

from hitl_sdk.integrations._common import Gate
from hitl_sdk.integrations.langgraph_requests import allows_edit, calls_from_interrupt, resume_values
from hitl_sdk.pause import PendingCall, UnsupportedRequest

__all__ = ["LangGraphApprovals"]

_CHECKPOINT_KEYS = ("thread_id", "checkpoint_ns", "checkpoint_id")


def _interrupts(out: Any) -> list[Interrupt]:
    """The pending interrupts of an invoke's output (`version="v2"` GraphOutput, or v1's dict)."""
    if isinstance(out, Mapping):
        return list(out.get("__interrupt__", ()))
    return list(getattr(out, "interrupts", ()) or ())


def _value(out: Any) -> Any:
    return out if isinstance(out, Mapping) else getattr(out, "value", out)


def _at(config: Mapping[str, Any], checkpoint: Mapping[str, Any] | None) -> dict[str, Any]:
    """`config` pointed at `checkpoint` (thread, namespace, id), or at the thread's latest."""
    configurable = {k: v for k, v in dict(config.get("configurable") or {}).items() if k not in _CHECKPOINT_KEYS}
    if checkpoint is None:
        configurable["thread_id"] = (config.get("configurable") or {})["thread_id"]
    else:
        configurable.update(checkpoint)
    return {**config, "configurable": configurable}


class LangGraphApprovals(Gate):
    """The graph's pauses as approvals (one per request), its resume in the worker."""

    async def settle(self, graph: Any, config: Mapping[str, Any], out: Any) -> Any:
        """The graph's value if it finished; if it interrupted, one approval per request (the
        checkpoint id in sealed state) and `Suspended`. `UnsupportedRequest` for an interrupt
        that is not a human-in-the-loop request."""
        interrupts = _interrupts(out)
        if not interrupts:
            return _value(out)
        calls = [c for i in interrupts for c in calls_from_interrupt(i.id, i.value, i.response_schema)]
        for call in calls:
            self._check_editable(call)
        snapshot = await graph.aget_state(_at(config, None))
        checkpoint = {k: snapshot.config["configurable"][k] for k in _CHECKPOINT_KEYS}
        await self.pause.suspend(calls, {"checkpoint": checkpoint})

    def _check_editable(self, call: PendingCall) -> None:
        """`editable` only for a request whose review allows `edit`: else an approver's edit
        could not reach the graph (it would become a rejection), so the config is refused."""
        if self.pause.editable_for(call.tool) and not allows_edit(call):
            shown = call.meta.get("allowed") or call.meta.get("config")
            raise UnsupportedRequest(
                f"editable names {call.tool!r}, but its review does not allow 'edit' ({shown}): add 'edit' to"
                f" its allowed_decisions (allow_edit for an Agent Inbox request), or drop {call.tool!r} from"
                " editable"
            )

    async def resume(self, graph: Any, config: Mapping[str, Any], **invoke: Any) -> Any:
        """In the worker: once every request of the pause is decided, resume the graph from the
        paused checkpoint, exactly once; return `output(value)`. `invoke`: more `ainvoke` args
        (e.g. `context=`)."""
        resumed = await self.pause.collect()

        async def go() -> Any:
            command: Command[Any] = Command(resume=resume_values(resumed.calls, resumed.decisions))
            out = await graph.ainvoke(command, _at(config, resumed.state["checkpoint"]), version="v2", **invoke)
            return self.output(await self.settle(graph, config, out))

        return await self.pause.complete(resumed, go)
