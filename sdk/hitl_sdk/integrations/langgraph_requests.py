"""LangGraph's human-in-the-loop shapes <-> gateway approvals (pure; no LangGraph import).

Four interrupt values are understood (their shapes as in LangGraph 1.2 / LangChain 1.5):

| interrupt value                                   | one approval per     | resume value for the interrupt id |
|---------------------------------------------------|----------------------|-----------------------------------|
| `ToolApprovalRequest` (`type: "tool_approval"`)   | interrupt            | one HITL decision                 |
| `HITLRequest` (`action_requests`, batched)        | action request       | `{"decisions": [...]}` by position |
| Agent Inbox `HumanInterrupt` (`action_request`)   | interrupt            | one `HumanResponse`               |
| a list of `HumanInterrupt`                        | element              | a list of `HumanResponse`         |
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from hitl_sdk.models import Decision, Source
from hitl_sdk.pause import PendingCall, UnsupportedRequest, rejection_for_edit

__all__ = [
    "ActionRequest",
    "HumanInterrupt",
    "HumanInterruptConfig",
    "HumanResponse",
    "allows_edit",
    "calls_from_interrupt",
    "resume_values",
]

PER_CALL, BATCHED, INBOX, INBOX_LIST = "per_call", "batched", "inbox", "inbox_list"


# The Agent Inbox schema. `langgraph.prebuilt.interrupt` is deprecated and the module it names
# as the new home (`langchain.agents.interrupt`) does not exist, so the TypedDicts live here.
class HumanInterruptConfig(TypedDict):
    allow_ignore: bool
    allow_respond: bool
    allow_edit: bool
    allow_accept: bool


class ActionRequest(TypedDict):
    action: str
    args: dict[str, Any]


class HumanInterrupt(TypedDict):
    action_request: ActionRequest
    config: HumanInterruptConfig
    description: str | None


class HumanResponse(TypedDict):
    type: str  # accept | ignore | response | edit
    args: str | ActionRequest | None


def _allowed_from_schema(schema: Any) -> list[str]:
    """The decision types a per-call interrupt's `response_schema` (JSON Schema) admits."""
    if not isinstance(schema, Mapping):
        return ["approve", "edit", "reject", "respond"]
    mapping = (schema.get("discriminator") or {}).get("mapping")
    if isinstance(mapping, Mapping):
        return list(mapping)
    const = ((schema.get("properties") or {}).get("type") or {}).get("const")
    return [const] if isinstance(const, str) else ["approve", "edit", "reject", "respond"]


def plain_description(description: str, tool: str, args: Any) -> str:
    """A call's description without the Python repr of its args. LangChain's
    `HumanInTheLoopMiddleware`, given no description for a tool, words one as
    `<prefix>\n\nTool: <name>\nArgs: <repr(args)>`: a card shows the tool and its args itself
    (its title, its args table), so that tail becomes the tool's name (Markdown code)."""
    tail = f"\n\nTool: {tool}\nArgs: {args}"
    if isinstance(args, Mapping) and description.endswith(tail):
        return f"{description[: -len(tail)]}\n\nTool: `{tool}`"
    return description


def _hitl_call(key: str, iid: str, shape: str, index: int, req: Mapping[str, Any], allowed: list[str]) -> PendingCall:
    name = str(req["name"])
    if not {"approve", "edit"} & set(allowed) or not {"reject", "respond"} & set(allowed):
        raise UnsupportedRequest(f"the review of {name!r} allows only {allowed}: it cannot be approved and rejected")
    meta = {"interrupt": iid, "shape": shape, "index": index, "allowed": allowed}
    args = dict(req.get("args") or {})
    return PendingCall(key, name, args, plain_description(str(req.get("description", "")), name, args), meta)


def _inbox_call(key: str, iid: str, shape: str, index: int, req: Mapping[str, Any]) -> PendingCall:
    action, config = req.get("action_request") or {}, dict(req.get("config") or {})
    name = str(action.get("action", "action"))
    if not (config.get("allow_accept") or config.get("allow_edit")):
        raise UnsupportedRequest(f"the interrupt {name!r} allows neither accept nor edit: it cannot be approved")
    if not (config.get("allow_respond") or config.get("allow_ignore")):
        raise UnsupportedRequest(f"the interrupt {name!r} allows neither response nor ignore: it cannot be rejected")
    meta = {"interrupt": iid, "shape": shape, "index": index, "config": config}
    return PendingCall(key, name, dict(action.get("args") or {}), str(req.get("description") or ""), meta)


def _is_inbox(value: Any) -> bool:
    return isinstance(value, Mapping) and "action_request" in value and "config" in value


def calls_from_interrupt(iid: str, value: Any, response_schema: Any = None) -> list[PendingCall]:
    """The approvals one interrupt asks for; `UnsupportedRequest` for any other interrupt value."""
    if isinstance(value, Mapping) and value.get("type") == "tool_approval":
        return [_hitl_call(iid, iid, PER_CALL, 0, value, _allowed_from_schema(response_schema))]
    if isinstance(value, Mapping) and "action_requests" in value:
        configs = list(value.get("review_configs") or [])
        calls = []
        for i, req in enumerate(value["action_requests"]):
            cfg: Mapping[str, Any] = next((c for c in configs if c.get("action_name") == req["name"]), {})
            allowed = list(cfg.get("allowed_decisions") or ["approve", "edit", "reject", "respond"])
            calls.append(_hitl_call(f"{iid}.{i}", iid, BATCHED, i, req, allowed))
        return calls
    if _is_inbox(value):
        return [_inbox_call(iid, iid, INBOX, 0, value)]
    if isinstance(value, Sequence) and not isinstance(value, str) and value and all(map(_is_inbox, value)):
        return [_inbox_call(f"{iid}.{i}", iid, INBOX_LIST, i, req) for i, req in enumerate(value)]
    raise UnsupportedRequest(
        f"interrupt {iid} is not a human-in-the-loop request (a HumanInterrupt, a HITLRequest or a"
        " ToolApprovalRequest), so it cannot become an approval"
    )


def allows_edit(call: PendingCall) -> bool:
    """Whether the request behind `call` takes an edit (`edit` in its allowed decisions, or the
    Agent Inbox's `allow_edit`)."""
    if call.meta["shape"] in (INBOX, INBOX_LIST):
        return bool(call.meta["config"].get("allow_edit"))
    return "edit" in call.meta["allowed"]


def hitl_decision(call: PendingCall, decision: Decision) -> dict[str, Any]:
    """A LangChain `HumanInTheLoopMiddleware` decision."""
    allowed = call.meta["allowed"]
    edited = decision.edited_args
    if edited is not None and "edit" in allowed:
        return {"type": "edit", "edited_action": {"name": call.tool, "args": edited}}
    if decision.approved and edited is None:
        if "approve" in allowed:
            return {"type": "approve"}
        return {"type": "edit", "edited_action": {"name": call.tool, "args": call.args}}
    message = rejection_for_edit(call.tool, edited) if edited is not None else decision.reason_text()
    # `respond` is a tool result that the model reads as success: only when reject is not allowed.
    return {"type": "reject" if "reject" in allowed else "respond", "message": message}


def inbox_response(call: PendingCall, decision: Decision) -> HumanResponse:
    """An Agent Inbox `HumanResponse`. A person's rejection is a `response` carrying the reason;
    a timeout's or a cancel's is `ignore` (each falls back on the other when it is not allowed)."""
    config = call.meta["config"]
    edited = decision.edited_args
    if edited is not None and config.get("allow_edit"):
        return {"type": "edit", "args": {"action": call.tool, "args": edited}}
    if decision.approved and edited is None:
        if config.get("allow_accept"):
            return {"type": "accept", "args": None}
        return {"type": "edit", "args": {"action": call.tool, "args": call.args}}
    reason = rejection_for_edit(call.tool, edited) if edited is not None else decision.reason_text()
    by_person = decision.source is Source.HUMAN
    if config.get("allow_respond") and (by_person or not config.get("allow_ignore")):
        return {"type": "response", "args": reason}
    return {"type": "ignore", "args": None}


def resume_values(calls: Sequence[PendingCall], decisions: Mapping[str, Decision]) -> dict[str, Any]:
    """`Command(resume=...)`'s map: interrupt id -> the value its request expects."""
    out: dict[str, Any] = {}
    for call in sorted(calls, key=lambda c: (c.meta["interrupt"], c.meta["index"])):
        iid, shape, decision = call.meta["interrupt"], call.meta["shape"], decisions[call.key]
        if shape == PER_CALL:
            out[iid] = hitl_decision(call, decision)
        elif shape == BATCHED:
            out.setdefault(iid, {"decisions": []})["decisions"].append(hitl_decision(call, decision))
        elif shape == INBOX:
            out[iid] = inbox_response(call, decision)
        else:
            out.setdefault(iid, []).append(inbox_response(call, decision))
    return out
