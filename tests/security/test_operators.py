"""Operators decide as themselves; agents never decide, cancel, retry or re-post through the API.

Issue 13's finding "operators can pose as someone else": an operator key recorded a decision as
`decided_by: "slack:U111"` with `source: "human"`, and the cards showed it as that person.
"""

from __future__ import annotations

import re

import aiohttp
import pytest

from tests.security.conftest import ALICE, BILLING, LEGACY, Launch, browser, call, db_counts, sign_in, suspend_body

pytestmark = pytest.mark.subprocess  # every test here starts a process

ACTIONS = (
    ("decision", {"outcome": "approve", "by": "slack:U111"}),
    ("cancel", {"reason": "dup"}),
    ("retry", {}),
    ("cards/resend", {"channel": "web"}),
    ("events/resend", {}),
)


async def test_without_an_operator_agent_keys_cannot_decide_anything(launch: Launch) -> None:
    """The secure default: no operator configured, and still no agent key may decide."""
    gw = launch(operators=False)
    async with aiohttp.ClientSession() as http:
        _, created = await call(
            http, "POST", f"{gw.url}/v1/suspend", json=suspend_body(worker="agent"), headers=BILLING
        )
        before = db_counts(gw)
        for headers in (BILLING, LEGACY):
            for action, body in ACTIONS:
                url = f"{gw.url}/v1/approvals/{created['id']}/{action}"
                status, reply = await call(http, "POST", url, json=body, headers=headers)
                assert status == 403 and reply["error"]["code"] == "operator_required", (action, reply)
                assert "security.operators" in reply["error"]["message"]
        assert db_counts(gw) == before
        # the agent's own token cannot decide either (security.token_decisions is off by default)
        status, _ = await call(
            http, "POST", f"{gw.url}/v1/resume", json={"token": created["resume_token"], "outcome": "approve"}
        )
        assert status == 403 and db_counts(gw) == before


async def test_an_operator_decision_names_the_operator_never_a_chat_user(launch: Launch) -> None:
    gw = launch()
    async with aiohttp.ClientSession() as http:
        _, created = await call(http, "POST", f"{gw.url}/v1/suspend", json=suspend_body(), headers=BILLING)
        impersonation = {"outcome": "approve", "by": "slack:U111", "comment": "as U111"}
        status, view = await call(
            http, "POST", f"{gw.url}/v1/approvals/{created['id']}/decision", json=impersonation, headers=ALICE
        )
        assert status == 200, view
        decision = view["decision"]
        assert decision["decided_by"] == "operator:alice" and decision["source"] == "operator"
        assert decision["on_behalf_of"] == "slack:U111" and decision["channel"] == "api"
        assert [v["approver"] for v in view["votes"]] == ["operator:alice"]
        assert view["quorum"]["approved_by"] == ["operator:alice"]
        _, events = await call(http, "GET", f"{gw.url}/v1/approvals/{created['id']}/events", headers=ALICE)
        approved = next(e for e in events["items"] if e["kind"] == "approved")
        assert approved["actor"] == "operator:alice" and approved["data"]["on_behalf_of"] == "slack:U111"
        assert "slack:U111" not in {e["actor"] for e in events["items"]}
        # the web inbox shows who decided, and whom the operator named
        async with browser() as web:
            await sign_in(web, gw.url)
            page = await (await web.get(f"{gw.url}/approvals/{created['id']}")).text()
        assert re.search(r"By <strong>operator:alice</strong> \(on behalf of slack:U111\)", page), page


async def test_an_operator_cancel_retry_and_repost_are_recorded_as_the_operator(launch: Launch) -> None:
    gw = launch()
    async with aiohttp.ClientSession() as http:
        _, created = await call(http, "POST", f"{gw.url}/v1/suspend", json=suspend_body(), headers=BILLING)
        url = f"{gw.url}/v1/approvals/{created['id']}"
        status, view = await call(http, "POST", f"{url}/cancel", json={"by": "web:bob", "reason": "dup"}, headers=ALICE)
        assert status == 200 and view["decision"]["decided_by"] == "operator:alice", view
        assert view["decision"]["on_behalf_of"] == "web:bob" and view["decision"]["source"] == "cancel"
