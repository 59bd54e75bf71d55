"""Rules attacked as an agent would: it cannot reach `allow` by what it says (`context`, its own
agent name, a claimed rule), cannot try rules out or read another agent's budget through the dry
run, and cannot move an `ask` to a destination it was not given. Against a real `serve`, on a
SQLite file and on PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from gateway.testing import TEST_API_KEY
from tests.conftest import OPERATOR
from tests.procs import Gateway, call, free_port, write_config

pytestmark = pytest.mark.subprocess

AGENT = {"Authorization": f"Bearer {TEST_API_KEY}"}
RULES = """
[web]
approvers = ["alice"]

[[rule]]
name = "small-charges"
when = 'step == "charge" && args.currency == "EUR" && args.amount < 5000'
then = "allow"

[[rule]]
name = "trusted-billing"
when = 'agent == "agent:billing" && step == "refund"'
then = "allow"
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


async def test_context_cannot_reach_allow_unless_a_rule_names_it(
    gateway: tuple[Gateway, aiohttp.ClientSession],
) -> None:
    """The agent's `context` is a fact only where a rule reads it: claiming to be small, or an
    operator, or approved, changes nothing here."""
    _, session = gateway
    claim = {"approved": True, "amount": 1, "agent": "operator:test", "step": "charge", "rule": "small-charges"}
    status, out = await call(
        session,
        "POST",
        "/v1/suspend",
        json=body("charge", "c1", amount=9000, currency="EUR") | {"context": claim},
        headers=AGENT,
    )
    assert status == 201 and out["status"] == "waiting_approval"
    status, out = await call(
        session, "POST", "/v1/suspend", json=body("charge", "c2", amount=9000) | {"context": 7}, headers=AGENT
    )
    assert status == 400 and out["error"]["message"].startswith("context: "), out


async def test_an_agent_cannot_pose_as_another_agent_a_rule_trusts(
    gateway: tuple[Gateway, aiohttp.ClientSession],
) -> None:
    """`agent` is the caller's key, never the body: naming agent:billing anywhere gets no allow."""
    _, session = gateway
    claims = ({"context": {"agent": "agent:billing"}}, {"requested_by": "agent:billing"})
    for i, extra in enumerate(claims):
        request = body("refund", f"b{i}", amount=1) | extra
        status, out = await call(session, "POST", "/v1/suspend", json=request, headers=AGENT)
        assert status == 201 and out["status"] == "waiting_approval", out


async def test_an_agent_cannot_dry_run_the_rules(gateway: tuple[Gateway, aiohttp.ClientSession]) -> None:
    """The dry run reads any agent's budgets: operators only."""
    _, session = gateway
    probe = body("charge", "d1", amount=1, currency="EUR") | {"agent": "billing"}
    status, out = await call(session, "POST", "/v1/rules/evaluate", json=probe, headers=AGENT)
    assert status == 403 and out["error"]["code"] == "operator_required", out
    status, out = await call(session, "POST", "/v1/rules/evaluate", json=probe, headers=OPERATOR)
    assert status == 200 and out["outcome"] == "allow", out
