"""`hitl-gateway mcp`: the approval tools, for any MCP client (docs/mcp.md).

- `request_approval` creates an approval and waits for a decision for up to `wait_seconds`.
- `get_approval` goes on waiting on an approval by id.
- `permission_prompt` is Claude Code's `--permission-prompt-tool`.

A human's wait never lives inside one tool call for longer than the caller asked: progress does
not reset an MCP client's read timeout (the MCP SDK's clients time out a request whatever
its progress notifications), so `request_approval` returns
`waiting_approval` with the id, and the agent calls `get_approval`, or the same
`request_approval` again (the same request finds the same approval), and loses nothing.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, NotRequired, cast

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from gateway import __version__
from gateway.mcp import approvals
from gateway.mcp.client import Caller, Gateway, GatewayCallError, Progress, progress, within
from gateway.mcp.serve import MissingKey, caller_key

# Past the deadline, how long permission_prompt still waits for the gateway's SLA timer to
# record the timeout (it runs every few seconds) before it denies on its own.
DEADLINE_GRACE = 30.0
INSTRUCTIONS = (
    "Ask a human before a risky step. Call request_approval with a title, a summary and the exact "
    "args; it waits up to wait_seconds. If the answer is status 'waiting_approval', call "
    "get_approval with the id (or request_approval again with the same input) until the status "
    "is approved, rejected, timed_out or cancelled. Act only when the status is 'approved', "
    "with decision.args."
)


class Decision(TypedDict):
    outcome: str | None
    decided_by: str | None
    comment: str | None
    args: dict[str, Any]


class ApprovalResult(TypedDict):
    status: str
    id: str
    deadline: str | None
    decision: NotRequired[Decision]
    message: NotRequired[str]


@dataclass(frozen=True, slots=True)
class Defaults:
    """Where cards go when a caller names none ([mcp] in the config, or the command's options)."""

    channels: tuple[str, ...] = ()
    approvers: tuple[str, ...] = ()
    policy: str = ""

    def fill(self, body: dict[str, Any]) -> dict[str, Any]:
        given = {k: v for k, v in body.items() if v not in (None, [], "")}
        for name, value in (("channels", list(self.channels)), ("approvers", list(self.approvers))):
            if value:
                given.setdefault(name, value)
        if self.policy:
            given.setdefault("policy", self.policy)
        return given


Title = Annotated[str, Field(min_length=1, max_length=300, description="What the human is asked to approve")]
Wait = Annotated[float, Field(ge=0, le=600, description="Seconds to wait for a decision in this call (0-600)")]


def build_server(gateway: Gateway, api_key: str | None, defaults: Defaults = Defaults()) -> MCPServer[Any]:
    """The MCP server. `api_key`: the gateway key under stdio; under HTTP each client's own."""
    mcp: MCPServer[Any] = MCPServer("hitl-gateway", version=__version__, instructions=INSTRUCTIONS)

    def caller(ctx: Context[Any, Any]) -> Caller:
        try:
            return gateway.as_caller(caller_key(ctx.request_context.request, api_key))
        except MissingKey as exc:
            raise ToolError(str(exc)) from None

    @mcp.tool(
        description="Ask a human to approve a risky step before doing it; waits up to wait_seconds. If the status "
        "is 'waiting_approval', call get_approval with the id. Act only on 'approved', with decision.args."
    )
    async def request_approval(
        ctx: Context[Any, Any],
        title: Title,
        summary: Annotated[str, Field(max_length=4000)] = "",
        args: Annotated[dict[str, Any], Field(description="The exact arguments of the step")] = {},  # noqa: B006
        channels: list[str] | None = None,
        policy: Annotated[str | None, Field(description="A policy name configured in the gateway")] = None,
        approvers: list[str] | None = None,
        run_id: Annotated[str | None, Field(min_length=1, max_length=200)] = None,
        step: Annotated[str, Field(min_length=1, max_length=200)] = "request_approval",
        idempotency_key: Annotated[str | None, Field(max_length=200)] = None,
        wait_seconds: Wait = 25,
        args_schema: Annotated[
            dict[str, Any] | None, Field(description="JSON Schema 2020-12 the args, and a human's edits, must validate")
        ] = None,
        editable: Annotated[
            bool | list[str] | None, Field(description="true, or the args a human may change before approving")
        ] = None,
        context: Annotated[
            dict[str, Any] | None, Field(description="What you know about the call, for the gateway's rules")
        ] = None,
    ) -> ApprovalResult:
        who = caller(ctx)
        fields: dict[str, Any] = {"run_id": run_id or f"mcp-{who.tag}", "step": step, "title": title}
        fields |= {"summary": summary, "args": args, "args_schema": args_schema, "editable": editable}
        fields |= {"context": context}
        body = defaults.fill({**fields, "channels": channels, "policy": policy, "approvers": approvers})
        body["idempotency_key"] = idempotency_key or approvals.request_key("mcp", {**body, "caller": who.tag})
        return await _tool(_request(who, ctx, body, wait_seconds))

    @mcp.tool(description="Wait up to wait_seconds more for the decision on an approval, by id.")
    async def get_approval(
        ctx: Context[Any, Any], id: Annotated[str, Field(min_length=1, max_length=200)], wait_seconds: Wait = 25
    ) -> ApprovalResult:
        async def go() -> dict[str, Any]:
            who = caller(ctx)
            view = await who.wait(await who.approval(id), within(wait_seconds), _progress(ctx, wait_seconds))
            return approvals.result(await who.approved(view))

        return await _tool(go())

    @mcp.tool(
        description="Claude Code's --permission-prompt-tool: asks a human whether a tool call may run.",
        structured_output=False,  # exactly one text block: Claude Code rejects any other shape
    )
    async def permission_prompt(
        ctx: Context[Any, Any], tool_name: str, input: dict[str, Any], tool_use_id: str | None = None
    ) -> str:
        try:
            answer = await _permission(caller(ctx), ctx, defaults, tool_name, input, tool_use_id)
        except (GatewayCallError, ToolError) as exc:  # fail closed: nobody approved it
            answer = {"behavior": "deny", "message": f"Could not ask a human: {exc}"}
        return json.dumps(answer)

    return mcp


async def _tool(work: Awaitable[dict[str, Any]]) -> ApprovalResult:
    """A gateway failure is a tool error in the gateway's words (it names the bad field)."""
    try:
        return cast(ApprovalResult, await work)
    except GatewayCallError as exc:
        raise ToolError(str(exc)) from None


async def _request(who: Caller, ctx: Context[Any, Any], body: dict[str, Any], wait_seconds: float) -> dict[str, Any]:
    created, new = await who.suspend(body)
    view = {"id": created["id"], "status": approvals.WAITING, "deadline": created.get("deadline")}
    if wait_seconds > 0 or not new:  # a retried request: the approval may be decided by now
        view = await who.wait(await who.approval(created["id"]), within(wait_seconds), _progress(ctx, wait_seconds))
    return approvals.result(await who.approved(view), body.get("args", {}))


async def _permission(
    who: Caller,
    ctx: Context[Any, Any],
    defaults: Defaults,
    tool_name: str,
    tool_input: dict[str, Any],
    tool_use_id: str | None,
) -> dict[str, Any]:
    fields = {"tool_name": tool_name, "input": tool_input, "caller": who.tag}
    body = defaults.fill(
        {
            "run_id": f"claude-code-{who.tag}",
            "step": tool_name[:200] or "tool",
            "title": f"Claude Code wants to use {tool_name}"[:300],
            "summary": approvals.summarize_input(tool_name, tool_input),
            "args": tool_input,
            # one approval per tool use; a retried prompt (or a restarted server) finds it again
            "idempotency_key": f"claude-code:{tool_use_id}"[:200]
            if tool_use_id
            else approvals.request_key("claude-code", fields),
        }
    )
    created, _ = await who.suspend(body)
    view = await who.wait(await who.approval(created["id"]), _until_deadline, _progress(ctx, None))
    if view["status"] == approvals.WAITING:
        return {"behavior": "deny", "message": approvals.deny_reason("timed_out", {})}
    doc = await who.rehydrate(created["resume_token"])  # the raw approved input, not the display copy
    return approvals.permission_answer(doc, tool_input)


def _until_deadline(view: dict[str, Any]) -> float:
    """Block until the approval's deadline (re-read each time: an escalation moves it)."""
    deadline = view.get("deadline")
    if not deadline:
        return math.inf
    left = (datetime.fromisoformat(deadline.replace("Z", "+00:00")) - datetime.now(UTC)).total_seconds()
    return time.monotonic() + left + DEADLINE_GRACE


def _progress(ctx: Context[Any, Any], total: float | None) -> Progress:
    return progress(ctx.report_progress, total)


__all__ = ["ApprovalResult", "Defaults", "build_server"]
