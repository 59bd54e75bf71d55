"""A standing grant stands in for a person only where the rules left the step to the default:
where an operator's rule matched and said `ask` (a budget crossed, a step routed to stricter
approvers), or a rule could not be evaluated (a deny that failed on an odd body), a person
decides each time. Otherwise one grant, made on a small charge, lets the agent charge past its
daily budget without anyone looking, and a grant keyed by customer lets a deny rule's type
error through. Over real HTTP against the in-process app, on a SQLite file."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.settings import Settings
from tests.conftest import OPERATOR, suspended

Client = TestClient[Any, Any]
RULES = [
    {
        "name": "over-budget",
        "when": 'step == "charge" && spent("amount", "24h") + args.amount > 10000',
        "then": "ask",
        "reason": "over 100 EUR today",
    },
    {"name": "no-big-payouts", "when": 'step == "payout" && args.amount > 1000', "then": "deny"},
    # fails on every body: a shadow rule changes nothing, so the grant still decides
    {"name": "watch", "when": "args.missing > 1", "then": "deny", "mode": "shadow"},
]


@pytest.fixture
def settings(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory(
        policies={
            "default": {"grants": ["1h"]},
            "by-customer": {"grants": ["8h"], "grant_max": "8h", "grant_fields": ["customer"]},
        },
        rule=RULES,
    )


async def _grant(client: Client, approval_id: str, grant: str) -> None:
    resp = await client.post(
        f"/v1/approvals/{approval_id}/decision", json={"outcome": "approve", "grant": grant}, headers=OPERATOR
    )
    assert resp.status == 200, await resp.text()


async def test_a_grant_does_not_carry_an_agent_past_an_ask_budget_rule(client: Client) -> None:
    first = await suspended(client, args={"amount": 6000})
    assert first["status"] == "waiting_approval"  # the default: a person
    await _grant(client, first["id"], "1h")
    # 6000 spent: the same charge again crosses the budget, and the rule asks a person
    again = await suspended(client, run_id="run-2", args={"amount": 6000})
    assert again["status"] == "waiting_approval", again
    view = await (await client.get(f"/v1/approvals/{again['id']}", headers=OPERATOR)).json()
    assert view["decision"] is None


async def test_a_grant_does_not_decide_where_a_deny_rule_failed(client: Client) -> None:
    first = await suspended(client, step="payout", policy="by-customer", args={"customer": "acme", "amount": 5})
    assert first["status"] == "waiting_approval"
    await _grant(client, first["id"], "8h")
    covered = await suspended(
        client, run_id="run-2", step="payout", policy="by-customer", args={"customer": "acme", "amount": 7}
    )
    assert covered["status"] == "approved"  # the grant works where the rules had nothing to say
    # a string amount makes the deny rule fail: a person decides, never the grant
    odd = await suspended(
        client, run_id="run-3", step="payout", policy="by-customer", args={"customer": "acme", "amount": "999999"}
    )
    assert odd["status"] == "waiting_approval", odd
