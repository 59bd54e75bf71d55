"""`hitl-gateway mcp --http` serves many callers from one process, each under its own key. To
give an agent the raw args an approver approved with changes, the process keeps the resume
token of each approval it asked for; that cache was shared by every caller, keyed by approval
id alone. Another caller who could read the approval (an operator's key reads any) was then
handed the raw approved args through the asker's token: the e-mail the API redacts for them."""

from __future__ import annotations

import aiohttp
import pytest

from gateway.mcp.client import Gateway as McpGateway
from tests.procs import Gateway
from tests.security.conftest import ALICE, ALICE_KEY, BILLING_KEY, call, suspend_body

pytestmark = pytest.mark.subprocess

ARGS = {"amount": 4200, "email": "billing@acme.test"}
SCHEMA = {"type": "object", "properties": {"amount": {"type": "integer", "maximum": 5000}}}


async def test_one_callers_resume_token_opens_nothing_for_another_caller(gateway: Gateway) -> None:
    mcp = McpGateway(gateway.url)
    try:
        body = suspend_body("mcp-cache-1", args=ARGS, args_schema=SCHEMA, editable=["amount"])
        created, _ = await mcp.as_caller(BILLING_KEY).suspend(body)
        async with aiohttp.ClientSession() as http:
            shown = (await call(http, "GET", f"{gateway.url}/v1/approvals/{created['id']}", headers=ALICE))[1]
            assert shown["args"]["email"] == "[redacted:email]"
            decision = {"outcome": "approve", "args": {**shown["args"], "amount": 3900}}
            url = f"{gateway.url}/v1/approvals/{created['id']}/decision"
            assert (await call(http, "POST", url, json=decision, headers=ALICE))[0] == 200

        operator = mcp.as_caller(ALICE_KEY)
        seen = await operator.approved(await operator.approval(created["id"]))
        assert seen["decision"]["args"]["email"] == "[redacted:email]"  # before: billing@acme.test

        asker = mcp.as_caller(BILLING_KEY)  # the agent that asked still gets what runs, raw
        mine = await asker.approved(await asker.approval(created["id"]))
        assert mine["decision"]["args"] == {"amount": 3900, "email": "billing@acme.test"}
    finally:
        await mcp.close()
