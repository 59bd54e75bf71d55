"""How a gateway decision answers Pydantic AI and the Claude Agent SDK (edits included: the
decision's `args` differ from `original_args` once approve-with-edits exists, issue 18)."""

from __future__ import annotations

from datetime import UTC, datetime

from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny
from hitl_sdk import Decision, Outcome, PendingCall, Resumed, Source
from hitl_sdk.integrations.claude_agent_sdk import permission_result
from hitl_sdk.integrations.pydantic_ai import deferred_results
from pydantic_ai import ToolApproved, ToolDenied

NOW = datetime(2026, 12, 1, tzinfo=UTC)
ARGS = {"invoice": "INV-1", "amount": 4200}
EDITED = {"invoice": "INV-1", "amount": 4000}
CALL = PendingCall("c1", "pay", ARGS)


def test_claude_allows_the_approved_input_and_denies_with_the_reason() -> None:
    plain = Decision(Outcome.APPROVE, "telegram:1", NOW)
    assert permission_result(CALL, plain) == PermissionResultAllow(updated_input=ARGS)
    edited = Decision(Outcome.APPROVE, "telegram:1", NOW, args=EDITED, original_args=ARGS)
    assert permission_result(CALL, edited) == PermissionResultAllow(updated_input=EDITED)
    timeout = Decision(Outcome.REJECT, "policy", NOW, Source.POLICY)
    deny = permission_result(CALL, timeout)
    assert isinstance(deny, PermissionResultDeny) and not deny.interrupt
    assert deny.message == "No decision within the deadline: reject by policy"


def test_pydantic_ai_gets_tool_approved_with_override_args_or_tool_denied() -> None:
    calls = (CALL, PendingCall("c2", "pay", ARGS), PendingCall("c3", "pay", ARGS))
    decisions = {
        "c1": Decision(Outcome.APPROVE, "telegram:1", NOW),
        "c2": Decision(Outcome.APPROVE, "telegram:1", NOW, args=EDITED, original_args=ARGS),
        "c3": Decision(Outcome.REJECT, "telegram:1", NOW, comment="not this month"),
    }
    results = deferred_results(Resumed("p", calls, decisions, None))
    assert results.approvals == {
        "c1": ToolApproved(override_args=None),
        "c2": ToolApproved(override_args=EDITED),
        "c3": ToolDenied(message="not this month"),
    }
