"""What the MCP tools answer, as pure functions of the gateway's JSON (no I/O, no MCP SDK).

The gateway's approval view (`GET /v1/approvals/{id}`) and rehydration document
(`GET /v1/resume/{token}`) go in; the tools' results come out: `{"status", "id", "deadline",
"decision"?}` for `request_approval` / `get_approval`, and Claude Code's permission answer.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from gateway.core.keys import canonical_json

WAITING = "waiting_approval"
# What an agent is told while it waits: the next call that loses nothing.
WAIT_HINT = "No decision yet. Call get_approval with this id to keep waiting; nothing is lost if this call timed out."


def caller_tag(key: str | None) -> str:
    """A short, stable name for the caller's key, in default run ids and idempotency keys: run
    ids and idempotency keys are per principal at the gateway (issue 13), so two agents that ask
    the same thing must not share one. A truncated, domain-separated hash, like the gateway's own
    `key-<hash>` names for listed keys: no use to anyone without the key (keys are random)."""
    if not key:
        return "nokey"
    return hashlib.sha256(b"hitl-gateway mcp caller\x00" + key.encode()).hexdigest()[:12]


def request_key(namespace: str, fields: dict[str, Any]) -> str:
    """The default idempotency key of a request: every field that shapes the approval (title,
    summary, args, channels, ...), so a retried call finds its approval and a different request
    never does. The gateway's own default (run_id:step:args) would give two different titles
    with the same args one approval."""
    raw = f"{namespace}:{canonical_json(fields)}"
    return f"{namespace}:" + hashlib.sha256(raw.encode("utf-8")).hexdigest()


def gate_key(secret: bytes, fields: dict[str, Any]) -> str:
    """The gate's idempotency key for one gated call: a MAC of its fields under the gate's
    secret. The fields (upstream, tool, caller, args) are all known to the agent, so a plain hash
    would let it post the gate's approval itself, with a harmless title, before the gate does."""
    message = b"hitl-gateway mcp-gate\x00" + canonical_json(fields).encode("utf-8")
    return "mcp-gate:" + hmac.new(secret, message, hashlib.sha256).hexdigest()


def approved_args(decision: dict[str, Any] | None, original: dict[str, Any]) -> dict[str, Any]:
    """The arguments the human approved: the decision's edited `args` when it carries them
    (issue 18's edits), else the ones that were asked for."""
    edited = (decision or {}).get("args")
    return edited if isinstance(edited, dict) else original


def decision_view(decision: dict[str, Any] | None, args: dict[str, Any]) -> dict[str, Any] | None:
    if not decision:
        return None
    return {
        "outcome": decision.get("outcome"),
        "decided_by": decision.get("decided_by"),
        "comment": decision.get("comment"),
        "args": approved_args(decision, args),
    }


def result(view: dict[str, Any], args: dict[str, Any] | None = None) -> dict[str, Any]:
    """The tools' answer for an approval view. `args`: the raw arguments the caller sent (the
    view's own are the redacted display copy: only used when the caller has no others)."""
    original = args if args is not None else dict(view.get("args") or {})
    out: dict[str, Any] = {"status": view["status"], "id": view["id"], "deadline": view.get("deadline")}
    decision = decision_view(view.get("decision"), original)
    if decision is not None:
        out["decision"] = decision
    if view["status"] == WAITING:
        out["message"] = WAIT_HINT
    return out


def permission_answer(doc: dict[str, Any], tool_input: dict[str, Any]) -> dict[str, Any]:
    """Claude Code's permission-prompt answer for a decided approval (its rehydration document).

    Only a human approval allows: a reject, a cancel and any timeout deny, whatever the timeout
    policy's outcome (an unattended Claude Code must not run a command nobody looked at)."""
    status = doc.get("status")
    decision = doc.get("decision") or {}
    if status == "approved":
        return {"behavior": "allow", "updatedInput": approved_args(decision, tool_input)}
    return {"behavior": "deny", "message": deny_reason(status, decision)}


def deny_reason(status: Any, decision: dict[str, Any]) -> str:
    who = decision.get("decided_by") or "the gateway"
    comment = decision.get("comment")
    if status == "rejected":
        text = f"Rejected by {who}"
    elif status == "timed_out":
        text = "No human decided before the approval's deadline"
    elif status == "cancelled":
        text = f"The approval was cancelled by {who}"
    else:
        text = f"No decision (status {status})"
    return f"{text}: {comment}" if comment else text


def summarize_input(tool_name: str, tool_input: dict[str, Any], limit: int = 1500) -> str:
    """A card's summary of a tool call: a shell command as it would run, else the input as JSON."""
    command = tool_input.get("command")
    if isinstance(command, str):
        text = f"$ {command}"
        description = tool_input.get("description")
        if isinstance(description, str) and description:
            text = f"{description}\n{text}"
    else:
        text = canonical_json(tool_input)
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = [
    "WAITING",
    "approved_args",
    "caller_tag",
    "decision_view",
    "deny_reason",
    "gate_key",
    "permission_answer",
    "request_key",
    "result",
    "summarize_input",
]
