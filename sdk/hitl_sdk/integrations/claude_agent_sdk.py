"""Claude Agent SDK: a `can_use_tool` callback that turns each permission request into a gateway
approval and answers `PermissionResultAllow` (with the approved input) or `PermissionResultDeny`
(with the reason).

    gate = ClaudeApprovals(run, channels=["telegram:-100123"])
    options = ClaudeAgentOptions(can_use_tool=gate.can_use_tool, ...)
    async for message in query(prompt=..., options=options): ...

Claude Code holds a permission request open inside its live session (the CLI process waits for
the answer), so this is the one integration that cannot dehydrate: the callback waits for the
decision, reading it with the suspend's resume token (the approved args raw, not the redacted
view) with backoff (`poll` up to `max_poll` seconds), while the gateway's SLA policy bounds the
wait. Each request is journaled: the approval on `<tool>:<digest>.<n>` (`digest`: the hash of the
tool's input; `n`: how many identical requests this gate answered before), then its decision.
Claude gives the same call a new `tool_use_id` in every session, so the key is the call's
content: an agent restarted with the same run id (after a crash, a kill) that asks for the same
call finds the approval it made, or the decision already taken, instead of asking again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny, ToolPermissionContext

from hitl_sdk.keys import idempotency_key
from hitl_sdk.models import Decision, StepStatus
from hitl_sdk.pause import EditTerms, PendingCall, default_title, edit_terms
from hitl_sdk.run import DurableRun

__all__ = ["ClaudeApprovals", "permission_result"]


def permission_result(call: PendingCall, decision: Decision) -> PermissionResultAllow | PermissionResultDeny:
    """Approved: allow with the approved input (the edited args, if the approver changed them).
    Rejected, timed out with reject, cancelled: deny with the reason, and the session goes on."""
    if decision.approved:
        return PermissionResultAllow(updated_input=decision.edited_args or call.args)
    return PermissionResultDeny(message=decision.reason_text())


class ClaudeApprovals:
    """`can_use_tool` for `ClaudeAgentOptions`: one approval per permission request.
    `args_schema` and `editable` are per tool name (as Claude names it, e.g.
    `mcp__pay__pay_invoice`), for the suspend of that tool's requests; an approved edit is the
    `updated_input` that the tool then runs with."""

    def __init__(
        self,
        run: DurableRun,
        *,
        channels: Sequence[str] = ("web",),
        approvers: Sequence[str] = (),
        policy: str | dict[str, Any] | None = None,
        title: Callable[[PendingCall], str] = default_title,
        poll: float = 0.2,
        max_poll: float = 2.0,
        args_schema: EditTerms | None = None,
        editable: EditTerms | None = None,
    ) -> None:
        self.run, self.title = run, title
        self.args_schema, self.editable = edit_terms("args_schema", args_schema), edit_terms("editable", editable)
        self.channels, self.approvers, self.policy = tuple(channels), tuple(approvers), policy
        self.poll, self.max_poll = poll, max_poll
        self._asked: dict[str, int] = {}  # identical requests answered so far, by digest

    def key(self, tool_name: str, tool_input: dict[str, Any]) -> str:
        """The request's key within the run: the same for the same call in a restarted session
        (the n-th request with this tool and input gets the n-th key), whatever its tool_use_id."""
        digest = idempotency_key(self.run.run_id, tool_name, tool_input)[:16]
        n = self._asked.get(digest, 0)
        self._asked[digest] = n + 1
        return f"{digest}.{n}"

    async def can_use_tool(
        self, tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow | PermissionResultDeny:
        call = PendingCall(self.key(tool_name, tool_input), tool_name, dict(tool_input))
        return permission_result(call, await self.decision(call))

    async def decision(self, call: PendingCall) -> Decision:
        """The call's decision: journaled already, or asked for and waited on."""
        journaled = (await self.run.steps()).get(call.step)
        if journaled is not None and journaled.status is StepStatus.SUCCEEDED:
            return Decision.from_json(journaled.output)
        # Idempotent: a request journaled already (an agent restarted) replays onto its approval;
        # the reply's resume token reads the decision with the approved args raw.
        reply = await self.run.request_approval(
            call.step,
            title=self.title(call),
            args=call.args,
            channels=self.channels,
            approvers=self.approvers,
            policy=self.policy,
            args_schema=self.args_schema.get(call.tool),
            editable=self.editable.get(call.tool, False),
        )
        return await self.run.record_decision(call.step, await self._wait(reply))

    async def _wait(self, reply: dict[str, Any]) -> Decision:
        delay = self.poll
        while (decision := await self.run.read_decision(reply)) is None:
            await asyncio.sleep(delay)
            delay = min(self.max_poll, delay * 2)
        return decision
