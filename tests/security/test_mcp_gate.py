"""Attacks on `hitl-gateway mcp-gate` by the agent behind it, with the MCP SDK's real client,
a real `hitl-gateway serve` and a real upstream MCP server that counts every call it gets.

The agent holds the same gateway key as the gate (stdio: `HITL_API_KEY`), so it can post
suspends and write journals of its own; what it must never do is make the gate forward a call
that a human did not approve as the gate asked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from gateway.core.keys import canonical_json
from gateway.mcp import approvals
from gateway.testing import TEST_API_KEY
from tests.mcp.conftest import (
    CHANNEL,
    SECOND_AGENT_KEY,
    Stack,
    counted,
    error_text,
    eventually,
    gate,
    journal,
    mcp_command,
    serve,
    upstream_command,
)
from tests.mcp.conftest import http_client as http_client
from tests.mcp.conftest import stack as stack  # a real gateway with the fake Telegram behind it
from tests.mcp.conftest import tg_api as tg_api

pytestmark = pytest.mark.subprocess
AGENT = {"Authorization": f"Bearer {TEST_API_KEY}"}
TRANSFER = {"to": "mallory", "amount": 9999}
APPROVER = ("--approver", "telegram:111")  # the gate's own choice of who decides
LEAKED = "a-gate-secret-the-agent-learned-0123"


async def agent_suspend(stack: Stack, key: str, run_id: str) -> str:
    """The agent posts the suspend the gate would post, with a harmless title and no approvers."""
    body = {"run_id": run_id, "step": "send_payment", "title": "Refresh the dashboard cache"}
    body |= {"args": TRANSFER, "idempotency_key": key}
    async with stack.http.post(f"{stack.url}/v1/suspend", json=body, headers=AGENT) as resp:
        assert resp.status == 201, await resp.text()
        return str((await resp.json())["id"])


def gate_scope(stack: Stack) -> dict[str, Any]:
    """Everything the gate keys a call by: all of it known to the agent."""
    upstream, caller = canonical_json(upstream_command(stack)), approvals.caller_tag(TEST_API_KEY)
    return {"upstream": upstream, "tool": "send_payment", "caller": caller, "args": TRANSFER}


async def test_an_approval_the_agent_posted_under_the_gates_key_is_never_forwarded(stack: Stack) -> None:
    """The gate's key used to be a plain hash of what the agent knows: the agent posted the
    suspend first, an operator approved "Refresh the dashboard cache", and the gate paid 9999."""
    key = approvals.request_key("mcp-gate", gate_scope(stack))  # how the gate used to name it
    planted = await agent_suspend(stack, key, "mcp-gate-" + key.rsplit(":", 1)[-1][:40])
    await stack.decide(planted, "approve")

    async with gate(stack, options=APPROVER) as mcp:
        answer = error_text(await mcp.call_tool("send_payment", TRANSFER))
    assert counted(stack) == []  # nothing reached the upstream
    assert "Waiting for a human" in answer and planted not in answer
    [asked] = [a for a in await stack.approvals() if a["id"] != planted]
    assert asked["title"] == "MCP tool call: send_payment" and asked["approvers"] == ["telegram:111"]
    assert asked["idempotency_key"] != key and asked["status"] == "waiting_approval"


async def test_the_gate_refuses_an_approval_that_is_not_the_one_it_asked_for(stack: Stack) -> None:
    """Even an agent that learned the gate's secret cannot hand the gate its own approval: the
    gate checks the approval it is handed (or the gateway refuses the replay with a 409)."""
    key = approvals.gate_key(LEAKED.encode(), gate_scope(stack))
    planted = await agent_suspend(stack, key, "mcp-gate-" + key.rsplit(":", 1)[-1][:40])
    await stack.decide(planted, "approve")

    async with gate(stack, options=APPROVER, env={"HITL_MCP_GATE_SECRET": LEAKED}) as mcp:
        answer = error_text(await mcp.call_tool("send_payment", TRANSFER))
    assert answer.startswith("Not forwarded") and counted(stack) == []


def paying(stack: Stack) -> Callable[[], Awaitable[bool]]:
    async def started() -> bool:
        return bool(counted(stack))

    return started


async def test_a_forward_whose_result_was_not_journaled_is_never_called_not_forwarded(stack: Stack) -> None:
    """The gateway dies (kill -9) while the upstream pays: the journal write fails. The gate
    must not say "Not forwarded" (a retry under a new key would pay twice). Once the gateway is
    back, a retry through another gate process (the same kept secret) finds the claim without a
    result and does not forward again; a retry through the gate that forwarded journals the
    result it kept, and returns it."""
    payment = {"to": "bob", "amount": 25, "delay": 2.0}
    async with gate(stack, wait=1.0) as mcp:
        error_text(await mcp.call_tool("send_payment", payment))
        [approval] = await stack.approvals()
        await stack.press(approval["id"], "Approve")
        call = asyncio.create_task(mcp.call_tool("send_payment", payment))
        await eventually(paying(stack))  # the upstream has started paying
        stack.gw.kill9()
        answer = error_text(await asyncio.wait_for(call, 60))
        await asyncio.to_thread(stack.gw.start)
        async with gate(stack, wait=1.0) as other:
            elsewhere = error_text(await other.call_tool("send_payment", payment))
        retried = await mcp.call_tool("send_payment", payment)
    assert "Not forwarded" not in answer and answer.startswith("Forwarded, result unknown")
    assert "rcpt-bob-25" in answer  # what the upstream answered, as far as the gate knows
    assert "Not forwarded" not in elsewhere and elsewhere.startswith("Forwarded, result unknown")
    assert not retried.is_error and retried.structured_content == {"paid": 25, "to": "bob", "receipt": "rcpt-bob-25"}
    assert len(counted(stack)) == 1  # paid once
    assert (await journal(stack, approval["run_id"]))["forward"]["output"]["structuredContent"]["paid"] == 25


async def test_a_literal_tool_name_with_brackets_is_gated_and_an_unmatched_pattern_warns(stack: Stack) -> None:
    """`pay[v2]` as a glob is a character class ('pay' then 'v' or '2'), so the tool named
    `pay[v2]` ran ungated. A pattern is first an exact name; one that gates nothing is a warning."""
    async with gate(stack, gated=("pay[v2]", "delete_*", "sned_payment")) as mcp:
        answer = error_text(await mcp.call_tool("pay[v2]", {"to": "mallory", "amount": 5}))
    assert "Waiting for a human" in answer and counted(stack) == []
    [approval] = await stack.approvals()
    assert approval["step"] == "pay[v2]"
    warnings = [line for line in (stack.tmp / "gate.log").read_text().splitlines() if "matches no tool" in line]
    assert len(warnings) == 1 and "'sned_payment'" in warnings[0]


@pytest.mark.parametrize("command", ["mcp", "mcp-gate"])
async def test_another_key_can_neither_use_nor_delete_an_mcp_session(stack: Stack, command: str) -> None:
    """Over --http, client B with its own valid key sends requests, then a DELETE, with client
    A's session id: 404, as for a session that does not exist; A's session goes on working."""
    options = ["--gateway", stack.url, "--channel", CHANNEL]
    if command == "mcp-gate":
        options += ["--require-approval", "delete_*", "--upstream", *upstream_command(stack)]
    urls = serve(mcp_command(command, *options), stack.tmp / f"{command}-http.log")
    url = next(urls)
    sent: list[dict[str, str]] = []  # the headers of A's requests once its session is open

    async def seen(response: Any) -> None:
        if "mcp-session-id" in response.request.headers:
            sent.append(dict(response.request.headers))

    try:
        async with http_client(url, TEST_API_KEY, seen) as alice:
            before = (await alice.list_tools()).model_dump()
            refused = await as_other_key(url, sent[-1])
            after = (await alice.list_tools()).model_dump()
    finally:
        urls.close()
    assert refused == [(404, "Session not found")] * 2
    assert after == before


async def as_other_key(url: str, victims: dict[str, str]) -> list[tuple[int, str]]:
    """(status, error message) of B's tools/list and B's DELETE on the victim's session: the
    victim's own headers, but B's key."""
    headers = {name: victims[name] for name in ("mcp-session-id", "mcp-protocol-version") if name in victims}
    headers |= {"Authorization": f"Bearer {SECOND_AGENT_KEY}", "Accept": "application/json, text/event-stream"}
    out = []
    async with aiohttp.ClientSession() as http:
        body = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
        for method, kw in (("POST", {"json": body}), ("DELETE", {})):
            async with http.request(method, url, headers=headers, **kw) as resp:
                text = await resp.text()
                message = (await resp.json(content_type=None))["error"]["message"] if resp.status == 404 else text
                out.append((resp.status, message))
    return out
