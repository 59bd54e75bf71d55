"""Rules at suspend against a real `serve`, on a SQLite file and on PostgreSQL: each outcome,
routing, shadow, what the events record, and a budget that 50 concurrent suspends cross."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from gateway.testing import TEST_API_KEY
from tests.conftest import OPERATOR
from tests.procs import Gateway, call, free_port, run_cli, write_config

pytestmark = pytest.mark.subprocess

AGENT = {"Authorization": f"Bearer {TEST_API_KEY}"}
RULES = """
[policies.finance-two]
timeout = "1h"

[web]
approvers = ["alice", "bob", "cfo"]

[rules]
default = "ask"
timezone = "Europe/Madrid"

[[rule]]
name = "small-charges"
when = 'step == "charge" && args.currency == "EUR" && args.amount < 5000'
then = "allow"
reason = "under 50 EUR"

[[rule]]
name = "no-drops"
when = 'step == "drop_table"'
then = "deny"
reason = "never from an agent"

[[rule]]
name = "watch-refunds"
when = 'step == "refund" && args.amount < 100'
then = "allow"
mode = "shadow"

[[rule]]
name = "large-charges"
when = 'step == "charge" && args.amount >= 1000000'
then = "ask"
policy = "finance-two"
approvers = ["web:cfo"]

[[rule]]
name = "daily-budget"
when = 'step == "pay" && spent("amount", "24h") + args.amount <= 1000'
then = "allow"
reason = "inside the daily budget"
"""


@pytest.fixture
async def gateway(tmp_path: Path, store_url: str) -> AsyncIterator[tuple[Gateway, aiohttp.ClientSession]]:
    port = free_port()
    config = write_config(tmp_path / "hitl.toml", store_url, port, RULES)
    gw = Gateway(config, port, tmp_path / "gw.log").start()
    try:
        async with aiohttp.ClientSession(gw.url) as session:
            yield gw, session
    finally:
        gw.stop()


def body(step: str, run: str, **args: Any) -> dict[str, Any]:
    return {"run_id": run, "step": step, "title": f"{step} {run}", "args": args, "channels": ["web"]}


async def events(session: aiohttp.ClientSession, approval_id: str) -> list[dict[str, Any]]:
    status, out = await call(session, "GET", f"/v1/approvals/{approval_id}/events", headers=OPERATOR)
    assert status == 200, out
    items: list[dict[str, Any]] = out["items"]
    return items


async def test_each_outcome_as_the_rules_say(gateway: tuple[Gateway, aiohttp.ClientSession]) -> None:
    gw, session = gateway
    # allow: approved at once, by the rule, bound to the args; no card
    status, allowed = await call(
        session, "POST", "/v1/suspend", json=body("charge", "r1", amount=1200, currency="EUR"), headers=AGENT
    )
    assert status == 201, allowed
    assert allowed["status"] == "approved"
    status, view = await call(session, "GET", f"/v1/approvals/{allowed['id']}", headers=OPERATOR)
    decision = view["decision"]
    assert (decision["decided_by"], decision["source"], decision["reason"]) == (
        "rule:small-charges",
        "rule",
        "under 50 EUR",
    )
    assert view["cards"] == [] and view["channels"] == []
    kinds = [(e["kind"], e["data"].get("rule")) for e in await events(session, allowed["id"])]
    assert kinds == [("suspended", "small-charges"), ("approved", "small-charges")]
    suspended, approved = await events(session, allowed["id"])
    assert len(suspended["data"]["rules_hash"]) == 64
    assert approved["data"]["args_hash"] == view["current_args_hash"] and approved["actor"] == "rule:small-charges"
    # the resume token reads the decision, as after a person's
    status, doc = await call(session, "GET", f"/v1/resume/{allowed['resume_token']}")
    assert status == 200 and doc["decision"]["decided_by"] == "rule:small-charges"

    # deny: rejected at once, with the rule's reason
    status, denied = await call(session, "POST", "/v1/suspend", json=body("drop_table", "r2"), headers=AGENT)
    assert status == 201 and denied["status"] == "rejected"
    status, view = await call(session, "GET", f"/v1/approvals/{denied['id']}", headers=OPERATOR)
    assert view["decision"]["reason"] == "never from an agent"

    # ask, routed: the rule's policy and approvers; a card in the inbox
    status, asked = await call(
        session, "POST", "/v1/suspend", json=body("charge", "r3", amount=2_000_000, currency="EUR"), headers=AGENT
    )
    assert status == 201 and asked["status"] == "waiting_approval"
    status, view = await call(session, "GET", f"/v1/approvals/{asked['id']}", headers=OPERATOR)
    assert view["policy"]["name"] == "finance-two" and view["approvers"] == ["web:cfo"]
    assert [c["channel"] for c in view["cards"]] == ["web"]

    # no rule matches: rules.default (ask), recorded as no rule
    status, plain = await call(
        session, "POST", "/v1/suspend", json=body("charge", "r4", amount=9000, currency="EUR"), headers=AGENT
    )
    assert status == 201 and plain["status"] == "waiting_approval"
    assert (await events(session, plain["id"]))[0]["data"]["rule"] is None

    # a replay of the allowed suspend answers the same approval
    status, again = await call(
        session, "POST", "/v1/suspend", json=body("charge", "r1", amount=1200, currency="EUR"), headers=AGENT
    )
    assert status == 200 and again["id"] == allowed["id"] and again["status"] == "approved"

    # a rule's decision is on the audit chain like a person's: the trail verifies
    code, out = await run_cli(gw.config, "audit", "verify")
    assert code == 0, out


async def test_a_shadow_rule_is_recorded_and_changes_nothing(gateway: tuple[Gateway, aiohttp.ClientSession]) -> None:
    _, session = gateway
    status, out = await call(session, "POST", "/v1/suspend", json=body("refund", "s1", amount=50), headers=AGENT)
    assert status == 201 and out["status"] == "waiting_approval"
    shadow = [e for e in await events(session, out["id"]) if e["kind"] == "rule_shadow"]
    assert [(e["data"]["rule"], e["data"]["would"]) for e in shadow] == [("watch-refunds", "allow")]


async def test_fifty_suspends_at_once_cross_a_budget_exactly(gateway: tuple[Gateway, aiohttp.ClientSession]) -> None:
    """1000 a day, 50 suspends of 30 at once: exactly 33 fit (990); the rest ask a person."""
    _, session = gateway
    replies = await asyncio.gather(
        *[call(session, "POST", "/v1/suspend", json=body("pay", f"p{i}", amount=30), headers=AGENT) for i in range(50)]
    )
    assert all(status == 201 for status, _ in replies), replies
    statuses = [out["status"] for _, out in replies]
    assert statuses.count("approved") == 33 and statuses.count("waiting_approval") == 17
