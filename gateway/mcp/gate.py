"""`hitl-gateway mcp-gate`: an MCP server in front of another one, where chosen tools need a human.

It lists the upstream's tools unchanged. A call to a tool that matches `require_approval`
suspends for approval; once a human approves, the approved arguments go to the upstream once,
and the upstream's result comes back. Every other call passes straight through.

Exactly once, with all state in the gateway: one gated call (its tool, its arguments, or the
client's own `_meta` key) is one run in the gateway's journal, `mcp-gate-<hash>`, with its
approval and two journaled steps. `claim` (first record wins) elects the one request that may
forward; `forward` holds the upstream's result. A retried call after the forward returns the
journaled result; a rejected call never reaches the upstream; a forward cut short by a crash is
reported, never repeated (it may have taken effect upstream).
"""

from __future__ import annotations

import fnmatch
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp_types import CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams, TextContent

from gateway import __version__
from gateway.core.keys import canonical_json
from gateway.mcp import approvals
from gateway.mcp.client import Caller, Gateway, GatewayCallError, progress, within
from gateway.mcp.serve import MissingKey, caller_key

KEY_META = "hitl-gateway/idempotency_key"  # a client's own key for one call, in tools/call `_meta`


@dataclass(frozen=True, slots=True)
class GateConfig:
    upstream: str  # what the gated calls' keys are scoped to: the upstream's command or URL
    require_approval: tuple[str, ...]
    channels: tuple[str, ...] = ()
    approvers: tuple[str, ...] = ()
    policy: str = ""
    wait_seconds: float = 25.0

    def gated(self, tool: str) -> bool:
        return any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.require_approval)


def error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


class Gatekeeper:
    """The gated-call use case over the gateway's API and one upstream session."""

    def __init__(self, config: GateConfig, upstream: ClientSession, gateway: Gateway, api_key: str | None) -> None:
        self.config, self.upstream, self.gateway, self.api_key = config, upstream, gateway, api_key

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return await self.upstream.list_tools(params=params)

    async def call_tool(self, ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> CallToolResult:
        args = dict(params.arguments or {})
        if not self.config.gated(params.name):
            return await self.upstream.call_tool(params.name, args)
        try:
            who = self.gateway.as_caller(caller_key(ctx.request, self.api_key))
            return await self.gated_call(who, ctx, params.name, args, (params.meta or {}).get(KEY_META))
        except (GatewayCallError, MissingKey) as exc:
            return error(f"Not forwarded: {exc}")

    async def gated_call(
        self, who: Caller, ctx: ServerRequestContext[Any], tool: str, args: dict[str, Any], client_key: Any
    ) -> CallToolResult:
        scope: dict[str, Any] = {"upstream": self.config.upstream, "tool": tool, "caller": who.tag}
        scope.update({"key": str(client_key)} if client_key else {"args": args})
        key = approvals.request_key("mcp-gate", scope)
        run_id = "mcp-gate-" + key.rsplit(":", 1)[-1][:40]
        journal = await who.steps(run_id)
        if "forward" in journal:  # a retry after the forward: the journaled result, not a second call
            return CallToolResult.model_validate(journal["forward"]["output"])
        created, _ = await who.suspend(self._suspend_body(run_id, tool, args, key))
        waiting = progress(ctx.session.report_progress, self.config.wait_seconds)
        view = await who.wait(await who.approval(created["id"]), within(self.config.wait_seconds), waiting)
        if view["status"] == approvals.WAITING:
            return error(
                f"Waiting for a human to approve {tool} (approval {view['id']}, deadline {view.get('deadline')}). "
                "Call the tool again with the same arguments to go on waiting; it will run once approved."
            )
        doc = await who.rehydrate(created["resume_token"])
        if doc["status"] != "approved":
            return error(f"Not forwarded: {approvals.deny_reason(doc['status'], doc.get('decision') or {})}")
        return await self.forward_once(who, run_id, tool, approvals.approved_args(doc.get("decision"), args))

    async def forward_once(self, who: Caller, run_id: str, tool: str, args: dict[str, Any]) -> CallToolResult:
        nonce = secrets.token_hex(16)
        claim = await who.record_step(run_id, "claim", "succeeded", {"nonce": nonce, "tool": tool})
        if (claim.get("output") or {}).get("nonce") != nonce:  # another request forwards it
            return await self._forwarded_elsewhere(who, run_id, claim)
        # Shielded: a client that gives up (read timeout, cancel) mid-call must not cut the
        # forward off before its result is journaled, or a retry could not know what happened.
        with anyio.CancelScope(shield=True):
            try:
                result = await self.upstream.call_tool(tool, args)
                status, problem = "succeeded", None
            except Exception as exc:  # the upstream's own failure, reported once, never retried
                problem = (
                    f"the upstream call failed ({type(exc).__name__}: {exc}); "
                    "it is not repeated, as it may have taken effect"
                )
                result, status = error(problem), "failed"
            output = result.model_dump(mode="json", by_alias=True, exclude_none=True)
            await who.record_step(run_id, "forward", status, output, problem)
        return result

    async def _forwarded_elsewhere(self, who: Caller, run_id: str, claim: dict[str, Any]) -> CallToolResult:
        stop = time.monotonic() + self.config.wait_seconds
        while time.monotonic() < stop:
            journal = await who.steps(run_id)
            if "forward" in journal:
                return CallToolResult.model_validate(journal["forward"]["output"])
            await anyio.sleep(self.gateway.poll_interval)
        return error(
            f"The approved call was claimed for forwarding at {claim.get('finished_at')} and has no journaled "
            "result yet: it is still running, or the gate stopped during it. It is not sent twice; call again "
            f"later, or look at run {run_id} in the gateway's journal."
        )

    def _suspend_body(self, run_id: str, tool: str, args: dict[str, Any], key: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "run_id": run_id,
            "step": tool[:200],
            "title": f"MCP tool call: {tool}"[:300],
            "summary": approvals.summarize_input(tool, args),
            "args": args,
            "idempotency_key": key,
        }
        optional = {"channels": list(self.config.channels), "approvers": list(self.config.approvers)}
        body.update({k: v for k, v in optional.items() if v})
        if self.config.policy:
            body["policy"] = self.config.policy
        return body


def build_gate(keeper: Gatekeeper) -> Server[Any]:
    return Server(
        "hitl-gateway-gate",
        version=__version__,
        on_list_tools=keeper.list_tools,
        on_call_tool=keeper.call_tool,
    )


def upstream_label(upstream: Sequence[str]) -> str:
    return canonical_json(list(upstream))


__all__ = ["KEY_META", "GateConfig", "Gatekeeper", "build_gate", "upstream_label"]
