"""The gate's pure rules: which tools are gated, which patterns gate nothing, and whether an
approval it is handed is its own (gateway.mcp.gate)."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.mcp.gate import GateConfig, foreign_field

CONFIG = GateConfig("[]", ("pay[v2]", "delete_*", "sned_payment"), b"s" * 32, approvers=("web:alice",))


def test_a_pattern_is_an_exact_name_first_then_a_glob() -> None:
    assert CONFIG.gated("pay[v2]") and CONFIG.gated("delete_file")
    assert CONFIG.gated("payv") and not CONFIG.gated("pay") and not CONFIG.gated("send_payment")
    assert CONFIG.unmatched({"pay[v2]", "delete_file", "send_payment"}) == ["sned_payment"]
    assert CONFIG.unmatched(set()) == ["pay[v2]", "delete_*", "sned_payment"]


ASKED = {
    "run_id": "mcp-gate-1",
    "step": "pay",
    "title": "MCP tool call: pay",
    "args": {"amount": 1},
    "idempotency_key": "mcp-gate:1",
    "approvers": ["web:Alice"],
}


def stored(**over: Any) -> dict[str, Any]:
    approval = {k: v for k, v in ASKED.items() if k != "args"} | {"approvers": ["web:alice"], "channels": ["web"]}
    approval |= {"requested_by": None, "policy": {"name": "default"}}
    original = over.pop("original_args", ASKED["args"])
    return {"approval": approval | over, "original_args": original}


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({}, None),
        ({"title": "Refresh the dashboard cache"}, "title"),
        ({"approvers": []}, "approvers"),
        ({"requested_by": "web:mallory"}, "requested_by"),
        ({"step": "refresh"}, "step"),
        ({"original_args": {"amount": 9999}}, "args"),
    ],
)
def test_an_approval_is_the_gates_own_only_if_it_is_what_the_gate_asked_for(over: dict[str, Any], field: Any) -> None:
    assert foreign_field(stored(**over), ASKED) == field
    assert foreign_field(stored(channels=["telegram:1"]), ASKED) is None  # channels the gate left to the gateway
    assert foreign_field(stored(channels=["telegram:1"]), {**ASKED, "channels": ["web"]}) == "channels"


def test_an_escalated_approval_may_show_its_policys_escalate_to_and_nothing_else() -> None:
    asked = {**ASKED, "channels": ["telegram:1"]}
    policy = {"name": "esc", "escalate_to": ["web"]}
    escalated = stored(channels=["telegram:1", "web"], policy=policy, escalations=1)
    assert foreign_field(escalated, asked) is None
    assert foreign_field(stored(channels=["telegram:1"], policy=policy, escalations=1), asked) is None
    assert foreign_field(stored(channels=["telegram:1", "web"], policy=policy, escalations=0), asked) == "channels"
    other = stored(channels=["telegram:1", "slack:C1"], policy=policy, escalations=1)
    assert foreign_field(other, asked) == "channels"


def test_a_rule_routed_approval_may_differ_only_where_the_rule_chose() -> None:
    """An operator's `ask` rule chose the channels and the policy (its record in the `suspended`
    event): those may differ from the gate's; approvers it did not choose must still match."""
    asked = {**ASKED, "channels": ["telegram:1"], "policy": "default"}
    routed = {"channels": ["web"], "policy": "ops"}
    by_rule = stored(channels=["web"], policy={"name": "ops"})
    assert foreign_field(by_rule, asked) == "channels"  # without the record: not the gate's
    assert foreign_field(by_rule, asked, routed) is None
    assert foreign_field(stored(channels=["web"], policy={"name": "ops"}, approvers=["web:eve"]), asked, routed) == (
        "approvers"
    )
    assert foreign_field(stored(title="Other", channels=["web"]), asked, routed) == "title"
