"""`hitl-gateway mcp-gate`: an MCP server in front of another one, where chosen tools need a human.

It lists the upstream's tools unchanged. A call to a tool that matches `require_approval`
suspends for approval; once a human approves, the approved arguments go to the upstream once,
and the upstream's result comes back. Every other call passes straight through.

Exactly once, with all state in the gateway: one gated call (its tool, its arguments, or the
client's own `_meta` key) is one run in the gateway's journal, `mcp-gate-<mac>`, with its
approval and two journaled steps. `claim` (first record wins) elects the one request that may
forward; `forward` holds the upstream's result. A retried call after the forward returns the
journaled result; a rejected call never reaches the upstream; a forward cut short by a crash, or
whose result could not be journaled, is reported as forwarded with its result unknown, never
repeated (it may have taken effect upstream).

The run id and idempotency key are a MAC under the gate's secret, so the agent, which holds the
same gateway key, cannot post the gate's approval first; and before forwarding, the gate checks
that the approval it is handed is the one it asked for.
"""

from __future__ import annotations

import fnmatch
import logging
import secrets
import time
from collections.abc import Collection, Sequence
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
UNKNOWN = "Forwarded, result unknown"  # what a forward that may have run, unjournaled, is called
MAX_UNJOURNALED = 1000
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GateConfig:
    upstream: str  # what the gated calls' keys are scoped to: the upstream's command or URL
    require_approval: tuple[str, ...]
    secret: bytes  # the MAC key of the gate's run ids and idempotency keys (never sent anywhere)
    channels: tuple[str, ...] = ()
    approvers: tuple[str, ...] = ()
    policy: str = ""
    wait_seconds: float = 25.0

    def gated(self, tool: str) -> bool:
        """A pattern is first the exact tool name (`pay[v2]` is that tool, not a character
        class), then a glob."""
        return tool in self.require_approval or any(fnmatch.fnmatchcase(tool, p) for p in self.require_approval)

    def unmatched(self, tools: Collection[str]) -> list[str]:
        """The patterns that gate none of `tools` (a typo would leave the tool ungated)."""
        return [p for p in self.require_approval if p not in tools and not fnmatch.filter(tools, p)]


def error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _folded(values: Any) -> list[str]:
    return sorted(str(v).casefold() for v in values or ())


def _asked_channels(stored: dict[str, Any], asked: dict[str, Any]) -> list[list[str]]:
    """The channels the gate's own approval may show: those asked for, and, once it escalated,
    those plus its policy's `escalate_to` (an escalation adds them, as the approval's view says)."""
    ways = [_folded(asked["channels"])]
    escalate_to = (stored.get("policy") or {}).get("escalate_to") or ()
    if stored.get("escalations") and isinstance(escalate_to, list):
        ways.append(_folded(dict.fromkeys([*_folded(asked["channels"]), *_folded(escalate_to)])))
    return ways


ROUTING = ("channels", "approvers", "policy")  # what an operator's `ask` rule may choose


def foreign_field(doc: dict[str, Any], asked: dict[str, Any], routed: dict[str, Any] | None = None) -> str | None:
    """The first field in which a decided approval (its rehydration document) differs from the
    suspend the gate sent (`asked`), or None when it is the gate's own. Channels, approvers and
    the policy are compared only where the gate named them (else the gateway chooses), and not
    where an operator's rule `routed` them (the `suspended` event's record, which only the
    gateway writes): a rule's policy and channels replace the gate's, and its approvers are
    chosen among its own list."""
    routed = routed or {}
    stored = doc.get("approval") or {}
    checks = {
        "run_id": stored.get("run_id") == asked["run_id"],
        "step": stored.get("step") == asked["step"],
        "idempotency_key": stored.get("idempotency_key") == asked["idempotency_key"],
        "title": stored.get("title") == asked["title"],
        "args": doc.get("original_args") == asked["args"],
        "requested_by": stored.get("requested_by") is None,  # the gate never names a requester
        "channels": "channels" not in asked or _folded(stored.get("channels")) in _asked_channels(stored, asked),
        "approvers": "approvers" not in asked or _folded(stored.get("approvers")) == _folded(asked["approvers"]),
        "policy": "policy" not in asked or (stored.get("policy") or {}).get("name") == asked["policy"],
    }
    return next((name for name, same in checks.items() if not same and name not in routed), None)


class Gatekeeper:
    """The gated-call use case over the gateway's API and one upstream session."""

    def __init__(self, config: GateConfig, upstream: ClientSession, gateway: Gateway, api_key: str | None) -> None:
        self.config, self.upstream, self.gateway, self.api_key = config, upstream, gateway, api_key
        # Forwards whose result the journal did not take (run id -> the step's record), written
        # again by the next call of the same run: bounded, and lost with the process.
        self.unjournaled: dict[str, tuple[str, dict[str, Any], str | None]] = {}

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return await self.upstream.list_tools(params=params)

    async def warn_unmatched(self) -> None:
        """One warning line per `require_approval` pattern that matches no upstream tool."""
        names: set[str] = set()
        cursor: str | None = None
        try:
            while True:
                page = PaginatedRequestParams(cursor=cursor) if cursor else None
                listed = await self.upstream.list_tools(params=page)
                names.update(tool.name for tool in listed.tools)
                if not (cursor := listed.next_cursor):
                    break
        except Exception as exc:  # a check at start: the gate still serves, and gates as configured
            log.warning("mcp-gate: could not list the upstream's tools to check require_approval: %s", exc)
            return
        for pattern in self.config.unmatched(names):
            log.warning("mcp-gate: require_approval pattern %r matches no tool of the upstream", pattern)

    async def call_tool(self, ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> CallToolResult:
        args = dict(params.arguments or {})
        if not self.config.gated(params.name):
            return await self.upstream.call_tool(params.name, args)
        try:
            who = self.gateway.as_caller(caller_key(ctx.request, self.api_key))
            return await self.gated_call(who, ctx, params.name, args, (params.meta or {}).get(KEY_META))
        except (GatewayCallError, MissingKey) as exc:  # before any forward: forward_once reports its own
            return error(f"Not forwarded: {exc}")

    async def gated_call(
        self, who: Caller, ctx: ServerRequestContext[Any], tool: str, args: dict[str, Any], client_key: Any
    ) -> CallToolResult:
        scope: dict[str, Any] = {"upstream": self.config.upstream, "tool": tool, "caller": who.tag}
        scope.update({"key": str(client_key)} if client_key else {"args": args})
        key = approvals.gate_key(self.config.secret, scope)
        run_id = "mcp-gate-" + key.rsplit(":", 1)[-1][:40]
        await self._journal_again(who, run_id)
        journal = await who.steps(run_id)
        if "forward" in journal:  # a retry after the forward: the journaled result, not a second call
            return CallToolResult.model_validate(journal["forward"]["output"])
        asked = self._suspend_body(run_id, tool, args, key)
        created, _ = await who.suspend(asked)  # a 409 (another request under this key) is raised
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
        field = foreign_field(doc, asked)
        if field in ROUTING and (routed := await who.routed(view["id"])):  # an operator's rule chose them
            field = foreign_field(doc, asked, routed)
        if field is not None:
            log.warning("mcp-gate: approval %s is not the one this gate asked for (%s differs)", view["id"], field)
            return error(f"Not forwarded: approval {view['id']} is not the one this gate asked for ({field} differs)")
        return await self.forward_once(who, run_id, tool, dict(doc["args"]))  # the approved args, raw

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
            try:
                await who.record_step(run_id, "forward", status, output, problem)
            except GatewayCallError as exc:  # it ran: never "not forwarded", which invites a retry
                log.warning("mcp-gate: run %s was forwarded, but its result could not be journaled: %s", run_id, exc)
                if len(self.unjournaled) >= MAX_UNJOURNALED:
                    self.unjournaled.pop(next(iter(self.unjournaled)))
                self.unjournaled[run_id] = (status, output, problem)
                return self._unjournaled(run_id, tool, result, exc)
        return result

    async def _journal_again(self, who: Caller, run_id: str) -> None:
        """A retry of a call this process forwarded without journaling its result: journal it
        now (the first record wins), so that this retry and every later one return it."""
        if (kept := self.unjournaled.get(run_id)) is None:
            return
        try:
            await who.record_step(run_id, "forward", *kept)
        except GatewayCallError:
            return  # still down: the retry goes on to say "forwarded, result unknown"
        self.unjournaled.pop(run_id, None)

    @staticmethod
    def _unjournaled(run_id: str, tool: str, result: CallToolResult, exc: GatewayCallError) -> CallToolResult:
        """The upstream ran, the journal did not take its result: say so, with what the upstream
        answered, so that nobody repeats the call under a new key."""
        note = (
            f"{UNKNOWN} to the gateway: {tool} was sent to the upstream once and may have taken effect, but its "
            f"result could not be journaled ({exc}). It is not sent again; do not repeat it under a new key. "
            f"Call again with the same arguments once the gateway is back (this gate then journals the result), "
            f"or look at run {run_id} in the gateway's journal. The upstream answered:"
        )
        return CallToolResult(content=[TextContent(type="text", text=note), *result.content], is_error=True)

    async def _forwarded_elsewhere(self, who: Caller, run_id: str, claim: dict[str, Any]) -> CallToolResult:
        stop = time.monotonic() + self.config.wait_seconds
        while time.monotonic() < stop:
            try:
                journal = await who.steps(run_id)
            except GatewayCallError:  # claimed: never "not forwarded", whatever the gateway says now
                break
            if "forward" in journal:
                return CallToolResult.model_validate(journal["forward"]["output"])
            await anyio.sleep(self.gateway.poll_interval)
        return error(
            f"{UNKNOWN}: the approved call was claimed for forwarding at {claim.get('finished_at')} and has no "
            "journaled result: it is still running, the gate stopped during it, or its result could not be "
            f"journaled. It is not sent twice; look at run {run_id} in the gateway's journal."
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


__all__ = ["KEY_META", "UNKNOWN", "GateConfig", "Gatekeeper", "build_gate", "foreign_field", "upstream_label"]
