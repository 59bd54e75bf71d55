"""The round-2 paths to a decision or to what runs, attacked by an agent with its own key and token:
approve with edited args, extend the deadline, read or seal the audit trail. Each is refused and
stores nothing (the stale-round attack on presses is in tests/{telegram,slack,email,web}/test_rounds.py)."""

from __future__ import annotations

import aiohttp
import pytest

from tests.procs import Gateway
from tests.security.conftest import BILLING, LEGACY, call, db_counts, suspend_body

pytestmark = pytest.mark.subprocess  # every test here starts a process

EDITED = {"amount": 1}


async def test_an_agent_cannot_approve_its_own_step_with_edited_args_or_extend_it(gateway: Gateway) -> None:
    async with aiohttp.ClientSession() as http:
        body = suspend_body(run_id="r2-edit", editable=True, policy={"timeout": "1h", "on_timeout": "reject"})
        status, created = await call(http, "POST", f"{gateway.url}/v1/suspend", json=body, headers=BILLING)
        assert status == 201, created
        before = db_counts(gateway)
        base = f"{gateway.url}/v1/approvals/{created['id']}"
        for headers in (BILLING, LEGACY):
            attempts = (
                ("decision", {"outcome": "approve", "args": EDITED}),
                ("decision", {"outcome": "approve", "args": EDITED, "args_hash": "0" * 64}),
                ("extend", {"duration": "1h"}),
            )
            for action, payload in attempts:
                status, reply = await call(http, "POST", f"{base}/{action}", json=payload, headers=headers)
                assert status == 403 and reply["error"]["code"] == "operator_required", (action, reply)
        # its own resume token cannot approve with changes either (token_decisions is off)
        token = {"token": created["resume_token"], "outcome": "approve", "args": EDITED}
        status, reply = await call(http, "POST", f"{gateway.url}/v1/resume", json=token)
        assert status in (400, 403), reply
        assert db_counts(gateway) == before
        status, view = await call(http, "GET", base, headers=BILLING)
        assert status == 200 and view["status"] == "waiting_approval" and view["args"] == {"amount": 4200}
        assert not view.get("extensions") and not view.get("proposal")


async def test_an_agent_cannot_read_or_seal_the_audit_trail(gateway: Gateway) -> None:
    async with aiohttp.ClientSession() as http:
        before = db_counts(gateway, "events")
        for method, path in (("GET", "/v1/audit/export"), ("POST", "/v1/audit/checkpoint")):
            status, reply = await call(http, method, f"{gateway.url}{path}", headers=BILLING)
            assert status == 403 and reply["error"]["code"] == "operator_required", (path, reply)
        assert db_counts(gateway, "events") == before
