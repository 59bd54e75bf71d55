"""An agent cannot read what the operators' rules record about themselves on its own approvals.

A shadow rule enforces nothing yet: its `rule_shadow` events say what it would have done. A
condition that fails to evaluate leaves `rule_errors` on the `suspended` event and, where
`rules.default` is deny, its message in the reason of the decision by `rule:default`. An agent that
read them learnt which rules are coming and on which bodies the rules break, a map for shaping
its next suspend around them. Every agent-facing path now leaves them out (the approval, the list,
the events, the resume token's document and its decision, a worker's document, the SDK and the
MCP tools over them); an operator's key still reads them all.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp.test_utils import TestServer
from hitl_sdk.client import GatewayClient
from hitl_sdk.models import Decision

from gateway.core import disclosure
from gateway.http.app import create_app
from gateway.mcp.approvals import result
from gateway.mcp.client import Caller, Gateway
from gateway.runtime import Runtime
from gateway.service import rulings
from gateway.testing import TEST_API_KEY, TEST_OPERATOR_KEY, FakeClock
from tests.conftest import AUTH, OPERATOR

RULES = [
    {"name": "watch-refunds", "when": 'step == "refund"', "then": "allow", "mode": "shadow"},
    {"name": "probe-limit", "when": 'step == "refund" && args.limit > 1', "then": "deny", "mode": "shadow"},
    {"name": "small-charges", "when": 'step == "charge" && args.amount < 10', "then": "allow"},
    {"name": "refunds", "when": 'step == "refund"', "then": "ask", "approvers": ["web:alice"]},
]
SECRET_WORDS = ("rule_shadow", "rule_errors", "watch-refunds", "probe-limit", "could not be evaluated")


@dataclass
class Env:
    rt: Runtime
    url: str
    refund: dict[str, Any]  # waiting: a shadow verdict, and a shadow rule's error
    charge: dict[str, Any]  # rejected by rules.default after small-charges failed on it


@pytest.fixture
async def env(
    aiohttp_server: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock
) -> AsyncIterator[Env]:
    settings = settings_factory(web={"approvers": ["alice"]}, rules={"default": "deny"}, rule=RULES)
    rt = Runtime(settings, clock=clock, owner="test")
    server: TestServer = await aiohttp_server(create_app(settings, runtime=rt, background=False))
    url = str(server.make_url("")).rstrip("/")
    async with GatewayClient(url, api_key=TEST_API_KEY) as agent:
        refund = await agent.suspend(run_id="run-r", step="refund", title="Refund", args={"amount": 5})
        charge = await agent.suspend(run_id="run-c", step="charge", title="Charge", args={"currency": "EUR"})
    assert refund["status"] == "waiting_approval" and charge["status"] == "rejected", (refund, charge)
    yield Env(rt, url, refund, charge)


def _secret_free(doc: Any) -> None:
    text = json.dumps(doc)
    assert [w for w in SECRET_WORDS if w in text] == [], text


async def _get(env: Env, path: str, headers: dict[str, str] | None) -> Any:
    async with GatewayClient(env.url) as raw:
        return await raw.request("GET", path, headers=headers)


async def test_the_operators_records_exist_and_an_operators_key_reads_them(env: Env) -> None:
    """The records this file hides are there, for the operators' key."""
    refund = await _get(env, f"/v1/approvals/{env.refund['id']}/events", OPERATOR)
    kinds = [e["kind"] for e in refund["items"]]
    assert "rule_shadow" in kinds
    suspended = refund["items"][0]["data"]
    assert [e["rule"] for e in suspended["rule_errors"]] == ["probe-limit"]
    charge = await _get(env, f"/v1/approvals/{env.charge['id']}", OPERATOR)
    assert charge["decision"]["reason"].startswith("rule small-charges could not be evaluated: ")
    listed = await _get(env, "/v1/approvals?run_id=run-c", OPERATOR)
    assert "could not be evaluated" in listed["items"][0]["decision"]["reason"]
    trail = await _get(env, f"/v1/approvals/{env.charge['id']}/events", OPERATOR)
    assert "could not be evaluated" in json.dumps(trail)


async def test_an_agents_key_reads_its_events_without_shadow_verdicts_or_rule_errors(env: Env) -> None:
    refund = await _get(env, f"/v1/approvals/{env.refund['id']}/events", AUTH)
    _secret_free(refund)
    suspended = refund["items"][0]
    assert suspended["kind"] == "suspended" and suspended["data"]["rule"] == "refunds"  # the enforced rule stays
    charge = await _get(env, f"/v1/approvals/{env.charge['id']}/events", AUTH)
    _secret_free(charge)
    rejected = [e for e in charge["items"] if e["kind"] == "rejected"]
    assert rejected[0]["data"]["reason"] == "rules.default = deny"


async def test_an_agents_key_reads_the_approval_and_the_list_with_the_default_as_the_reason(env: Env) -> None:
    view = await _get(env, f"/v1/approvals/{env.charge['id']}", AUTH)
    _secret_free(view)
    assert (view["decision"]["decided_by"], view["decision"]["reason"]) == ("rule:default", "rules.default = deny")
    listed = await _get(env, "/v1/approvals", AUTH)
    assert len(listed["items"]) == 2
    _secret_free(listed)


async def test_a_resume_token_and_a_worker_read_no_rule_error(env: Env) -> None:
    async with GatewayClient(env.url, resume_token=env.charge["resume_token"]) as worker:
        doc = await worker.rehydrate()
    _secret_free(doc)
    assert doc["decision"]["reason"] == doc["approval"]["decision"]["reason"] == "rules.default = deny"
    approval = await env.rt.service.get(env.charge["id"])  # what a resume job's worker is launched with
    _secret_free(env.rt.service.resumes.rehydration_document(approval))


async def test_the_sdk_gives_the_agent_no_rule_error(env: Env) -> None:
    async with GatewayClient(env.url, api_key=TEST_API_KEY) as agent:
        view = await agent.get(env.charge["id"])
        _secret_free(view)
        _secret_free(await agent.get(env.refund["id"]))
    decision = Decision.from_json(view["decision"] | {"decided_at": 0})
    assert decision.reason_text() == "Decided by the gateway's rule:default: rules.default = deny"


async def test_the_mcp_tools_give_the_agent_no_rule_record(env: Env) -> None:
    gateway = Gateway(env.url)
    try:
        caller = Caller(gateway, TEST_API_KEY)
        for approval in (env.refund, env.charge):
            view = await caller.approval(approval["id"])
            _secret_free(view)
            _secret_free(result(view))
        # the gate still reads what an enforced rule routed, from the same (filtered) events
        assert await caller.routed(env.refund["id"]) == {"approvers": ["web:alice"]}
        operator = Caller(gateway, TEST_OPERATOR_KEY)
        assert "could not be evaluated" in json.dumps(await operator.approval(env.charge["id"]))
    finally:
        await gateway.close()


def test_the_default_decider_is_the_rules_own() -> None:
    assert disclosure.DEFAULT_DECIDER == rulings.RULE_PREFIX + rulings.DEFAULT_RULE
    assert disclosure.default_reason("approve") == "rules.default = allow"
