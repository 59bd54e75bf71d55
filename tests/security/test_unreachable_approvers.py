"""Approvers an agent names that nobody can be, against a real `hitl-gateway serve`.

A suspend whose approvers cannot reach its quorum on any of its channels must be a 400 naming
`approvers`. An `operator:` approver that is no configured operator would lock out every real
operator (`not_an_approver`) and every web approver: nobody could decide, so the approval would
end by its policy's timeout, and where that is "approve unless someone rejects in time" the agent
would have taken away every human's reject. Likewise `quorum = 2` with one decider and one name
nobody answers to could never be approved by people, only by the timeout."""

from __future__ import annotations

import aiohttp
import pytest

from tests.security.conftest import ALICE, BILLING, Launch, call, suspend_body

pytestmark = pytest.mark.subprocess
POLICY = """
[policies.lazy]
timeout = "1h"
on_timeout = "approve"

[policies.dual]
timeout = "1h"
on_timeout = "approve"
quorum = 2
"""


async def test_an_operator_nobody_is_is_refused_as_an_approver(launch: Launch) -> None:
    gateway = launch(extra=POLICY)
    async with aiohttp.ClientSession() as http:
        body = suspend_body("ghost", policy="lazy", approvers=["operator:nobody"])
        status, made = await call(http, "POST", f"{gateway.url}/v1/suspend", json=body, headers=BILLING)
        if status == 201:  # show what it leads to before failing
            url = f"{gateway.url}/v1/approvals/{made['id']}/decision"
            decided, why = await call(http, "POST", url, json={"outcome": "reject"}, headers=ALICE)
            pytest.fail(f"accepted; the real operator's reject: {decided} {why}")
        assert status == 400 and made["error"]["details"]["field"] == "approvers", made


async def test_a_quorum_that_only_the_timeout_can_reach_is_refused(launch: Launch) -> None:
    gateway = launch(extra=POLICY)
    async with aiohttp.ClientSession() as http:
        body = suspend_body("dual", policy="dual", approvers=["web:alice", "web:mallory"])
        status, made = await call(http, "POST", f"{gateway.url}/v1/suspend", json=body, headers=BILLING)
    assert status == 400 and made["error"]["details"]["field"] == "approvers", (
        f"quorum 2 with one possible decider (web:mallory is no web approver): {status} {made}"
    )
