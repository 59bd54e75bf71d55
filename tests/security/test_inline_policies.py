"""Agents cannot weaken policy (`security.inline_policies`), against a real gateway in each mode.

Issue 13's first finding, verbatim: an agent suspends with the inline policy
`{"timeout": "1s", "on_timeout": "approve", "name": "payments"}`, and a second later its step is
approved "by policy 'payments'".
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest

from tests.procs import Gateway
from tests.security.conftest import ALICE, BILLING, Launch, call, db_counts, suspend_body

pytestmark = pytest.mark.subprocess  # every test here starts a process

POLICIES = """
[policies.default]
timeout = "30m"
quorum = 2

[policies.payments]
timeout = "1h"
on_timeout = "reject"

[policies.content]
timeout = "1h"
on_timeout = "approve"
agent_may_set = ["timeout"]
max_timeout = "1d"
"""
FINDING = {"timeout": "1s", "on_timeout": "approve", "name": "payments"}  # borrows the operator's name
SELF_APPROVING = {"timeout": "1s", "on_timeout": "approve"}


async def _refused(http: aiohttp.ClientSession, gw: Gateway, policy: Any, field: str, **over: Any) -> None:
    """403 policy_not_allowed naming `field`, and nothing stored."""
    before = db_counts(gw)
    body = suspend_body(f"run-{field}", policy=policy, **over)
    status, reply = await call(http, "POST", f"{gw.url}/v1/suspend", json=body, headers=BILLING)
    assert status == 403, reply
    assert reply["error"]["code"] == "policy_not_allowed" and reply["error"]["details"]["field"] == field, reply
    assert reply["error"]["message"].startswith(f"{field}:")
    assert db_counts(gw) == before


async def _suspended(http: aiohttp.ClientSession, gw: Gateway, run_id: str, **over: Any) -> dict[str, Any]:
    status, reply = await call(http, "POST", f"{gw.url}/v1/suspend", json=suspend_body(run_id, **over), headers=BILLING)
    assert status == 201, reply
    return dict(reply)


async def _final(http: aiohttp.ClientSession, gw: Gateway, approval_id: str, within: float = 15) -> dict[str, Any]:
    for _ in range(int(within / 0.1)):
        _, view = await call(http, "GET", f"{gw.url}/v1/approvals/{approval_id}", headers=ALICE)
        if view["status"] != "waiting_approval":
            return dict(view)
        await asyncio.sleep(0.1)
    raise AssertionError(f"approval {approval_id} was not decided within {within}s")


@pytest.mark.parametrize("mode", ["restrict", "deny", "allow"])
async def test_an_agent_cannot_approve_its_own_step_by_policy(launch: Launch, mode: str) -> None:
    gw = launch(security=f'inline_policies = "{mode}"', extra=POLICIES)
    async with aiohttp.ClientSession() as http:
        # The finding itself, in every mode: the operator's policy name is the operator's, and
        # `payments` lets the agent choose nothing.
        await _refused(http, gw, FINDING, "policy.timeout")
        if mode == "restrict":
            await _refused(http, gw, SELF_APPROVING, "policy.on_timeout")
        elif mode == "deny":
            await _refused(http, gw, SELF_APPROVING, "policy")
            await _refused(http, gw, {"timeout": "5m"}, "policy")  # even a harmless one
        else:  # allow: round 1's behaviour, for deployments that trust their agents
            created = await _suspended(http, gw, "run-allow", policy=SELF_APPROVING)
            view = await _final(http, gw, created["id"])
            assert (view["status"], view["decision"]["outcome"]) == ("timed_out", "approve")
            assert view["decision"]["reason"].startswith("policy 'inline': no decision after")
        # whatever the mode, a configured policy is the operator's word
        named = await _suspended(http, gw, "run-named", policy="payments")
        assert named["deadline"] is not None


async def test_restrict_refuses_each_weakening_and_keeps_the_rest(launch: Launch) -> None:
    gw = launch(extra=POLICIES)  # restrict is the default
    async with aiohttp.ClientSession() as http:
        escalate = {"timeout": "1m", "on_timeout": "escalate", "escalate_to": ["web"], "after_escalation": "approve"}
        await _refused(http, gw, escalate, "policy.after_escalation")
        await _refused(http, gw, {"timeout": "1m", "quorum": 1}, "policy.quorum")  # the default needs 2
        kept = await _suspended(http, gw, "run-ok", policy={"timeout": "2s", "on_timeout": "reject", "quorum": 3})
        view = await _final(http, gw, kept["id"])
        assert (view["status"], view["decision"]["outcome"]) == ("timed_out", "reject")


async def test_a_named_policy_lets_the_agent_choose_within_its_bounds(launch: Launch) -> None:
    """The seed's case: "auto-publish at 11:00 unless someone rejects" is the named policy
    `content` (on_timeout = approve) plus the agent's deadline, within `max_timeout`."""
    gw = launch(extra=POLICIES)
    async with aiohttp.ClientSession() as http:
        soon = datetime.now(UTC) + timedelta(seconds=2)
        published = await _suspended(http, gw, "run-publish", policy="content", deadline=soon.isoformat())
        assert published["deadline"] == soon.isoformat().replace("+00:00", "Z")
        chosen = await _suspended(http, gw, "run-choice", policy={"name": "content", "timeout": "2h"})
        _, view = await call(http, "GET", f"{gw.url}/v1/approvals/{chosen['id']}", headers=ALICE)
        assert (view["policy"]["name"], view["policy"]["timeout"], view["policy"]["on_timeout"]) == (
            "content",
            "2h",
            "approve",
        )
        too_far = (datetime.now(UTC) + timedelta(days=2)).isoformat()
        await _refused(http, gw, "content", "deadline", deadline=too_far)  # beyond max_timeout
        await _refused(http, gw, {"name": "content", "timeout": "never"}, "policy.timeout")
        await _refused(http, gw, {"name": "content", "quorum": 1}, "policy.quorum")  # not in agent_may_set
        await _refused(http, gw, "payments", "deadline", deadline=too_far)  # payments lets it set nothing
        status, reply = await call(
            http,
            "POST",
            f"{gw.url}/v1/suspend",
            headers=BILLING,
            json=suspend_body("run-past", policy="content", deadline="2001-01-01T00:00:00Z"),
        )
        assert status == 400 and reply["error"]["details"]["field"] == "deadline"
        view = await _final(http, gw, published["id"])
        assert (view["status"], view["decision"]["outcome"]) == ("timed_out", "approve")
        assert view["decision"]["reason"].startswith("policy 'content'")


async def test_operators_are_trusted_with_policies(launch: Launch) -> None:
    gw = launch(security='inline_policies = "deny"', extra=POLICIES)
    async with aiohttp.ClientSession() as http:
        body = suspend_body("run-op", policy={"timeout": "1h", "on_timeout": "approve"})
        status, reply = await call(http, "POST", f"{gw.url}/v1/suspend", json=body, headers=ALICE)
        assert status == 201, reply
