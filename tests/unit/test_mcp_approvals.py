"""The MCP tools' answers as pure functions of the gateway's JSON (gateway.mcp.approvals)."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.mcp import approvals

ARGS = {"command": "rm -rf ./build"}


def doc(status: str, **decision: Any) -> dict[str, Any]:
    return {"status": status, "decision": decision or None, "args": ARGS}


def test_an_approval_allows_with_the_input_that_was_asked_for() -> None:
    answer = approvals.permission_answer(doc("approved", outcome="approve", decided_by="telegram:1"), ARGS)
    assert answer == {"behavior": "allow", "updatedInput": ARGS}


def test_an_edited_approval_allows_with_the_edited_input() -> None:
    """Issue 18: a decision may carry edited args; those are what runs, in Claude Code and the gate."""
    edited = {"command": "rm -rf ./build/tmp"}
    answer = approvals.permission_answer(doc("approved", outcome="approve", args=edited), ARGS)
    assert answer == {"behavior": "allow", "updatedInput": edited}
    view = {"id": "a1", "status": "approved", "deadline": None, "decision": {"outcome": "approve", "args": edited}}
    assert approvals.result(view, ARGS)["decision"]["args"] == edited


@pytest.mark.parametrize(
    ("status", "decision", "says"),
    [
        (
            "rejected",
            {"outcome": "reject", "decided_by": "slack:U1", "comment": "not today"},
            "Rejected by slack:U1: not today",
        ),
        (
            "timed_out",
            {"outcome": "approve", "decided_by": "policy"},
            "No human decided before the approval's deadline",
        ),
        ("cancelled", {"outcome": "reject", "decided_by": "operator:ops"}, "cancelled by operator:ops"),
    ],
)
def test_everything_but_a_human_approval_denies_with_the_reason(
    status: str, decision: dict[str, Any], says: str
) -> None:
    """A timeout denies even when the policy's timeout outcome is approve."""
    answer = approvals.permission_answer(doc(status, **decision), ARGS)
    assert answer["behavior"] == "deny" and says in answer["message"]
    assert set(answer) == {"behavior", "message"}


def test_the_result_shape() -> None:
    waiting = approvals.result({"id": "a1", "status": "waiting_approval", "deadline": "2030-01-01T00:00:00Z"})
    assert (
        waiting["status"] == "waiting_approval" and "decision" not in waiting and "get_approval" in waiting["message"]
    )
    decided = {"id": "a1", "status": "rejected", "deadline": None, "args": {"x": "[redacted]"}}
    decided["decision"] = {
        "outcome": "reject",
        "decided_by": "web:bo",
        "comment": "no",
        "reason": "x",
        "channel": "web",
    }
    out = approvals.result(decided, {"x": "raw"})
    assert out == {
        "status": "rejected",
        "id": "a1",
        "deadline": None,
        "decision": {"outcome": "reject", "decided_by": "web:bo", "comment": "no", "args": {"x": "raw"}},
    }


def test_request_keys_cover_every_field_that_shapes_the_approval() -> None:
    base = {"run_id": "r", "step": "s", "title": "Pay", "summary": "", "args": {"a": 1}}
    key = approvals.request_key("mcp", base)
    assert key == approvals.request_key("mcp", dict(reversed(list(base.items()))))  # canonical
    assert key != approvals.request_key("mcp", {**base, "title": "Refund"})
    assert key != approvals.request_key("mcp", {**base, "channels": ["web"]})
    assert key != approvals.request_key("mcp-gate", base)
    assert key.startswith("mcp:") and len(key) <= 200


def test_a_card_summary_shows_a_command_as_it_would_run() -> None:
    assert approvals.summarize_input("Bash", {"command": "ls", "description": "List"}) == "List\n$ ls"
    assert approvals.summarize_input("Write", {"path": "a", "content": "b"}) == '{"content":"b","path":"a"}'
    assert len(approvals.summarize_input("Write", {"content": "x" * 5000})) == 1500


def test_gate_keys_are_a_mac_of_every_field_under_the_secret() -> None:
    """What the agent knows (upstream, tool, caller, args) does not give it the gate's key."""
    fields = {"upstream": '["srv"]', "tool": "pay", "caller": "abc", "args": {"amount": 1}}
    key = approvals.gate_key(b"s" * 32, fields)
    assert key.startswith("mcp-gate:") and key == approvals.gate_key(b"s" * 32, dict(reversed(list(fields.items()))))
    assert key != approvals.gate_key(b"t" * 32, fields)
    assert key != approvals.gate_key(b"s" * 32, {**fields, "args": {"amount": 2}})
    assert key != approvals.request_key("mcp-gate", fields)  # the plain hash the agent could compute
