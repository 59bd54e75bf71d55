"""request_approval and get_approval over stdio: the SDK's real client, `hitl-gateway mcp` as a
subprocess, a real `hitl-gateway serve` behind it and a human on the fake Telegram."""

from __future__ import annotations

import json

import pytest
from mcp.shared.exceptions import MCPError

from gateway.testing import TEST_API_KEY
from tests.mcp.conftest import (
    CHANNEL,
    OPERATOR,
    SECOND_AGENT_KEY,
    Stack,
    approval_server,
    error_text,
    mcp_session,
    payload,
)

pytestmark = pytest.mark.subprocess
CHARGE = {"title": "Charge ACME $42", "summary": "Monthly invoice", "args": {"amount": 4200, "currency": "USD"}}


async def test_waiting_then_a_telegram_press_then_get_approval_says_approved(stack: Stack) -> None:
    command, env = approval_server(stack)
    async with mcp_session(stack.tmp, command, env) as mcp:
        first = payload(await mcp.call_tool("request_approval", {**CHARGE, "wait_seconds": 0}))
        assert first["status"] == "waiting_approval" and "decision" not in first
        assert "get_approval" in first["message"]
        view = await stack.view(first["id"])
        assert view["channels"] == [CHANNEL] and view["args"] == CHARGE["args"] and view["title"] == CHARGE["title"]

        await stack.press(first["id"], "Approve")
        done = payload(await mcp.call_tool("get_approval", {"id": first["id"], "wait_seconds": 10}))
    assert done["status"] == "approved"
    assert done["decision"] == {
        "outcome": "approve",
        "decided_by": "telegram:111",
        "comment": None,
        "args": CHARGE["args"],
    }


async def test_a_wait_that_outlasts_the_client_timeout_leaves_an_approval_to_complete(stack: Stack) -> None:
    """Progress does not reset the client's read timeout: the call fails, the approval stays,
    its id was in the progress messages, and get_approval completes it."""
    command, env = approval_server(stack)
    seen: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    async with mcp_session(stack.tmp, command, env) as mcp:
        with pytest.raises(MCPError) as err:
            await mcp.call_tool(
                "request_approval", {**CHARGE, "wait_seconds": 30}, read_timeout_seconds=1.5, progress_callback=progress
            )
        assert err.value.error.code == -32001  # the client's request timeout
        [approval] = await stack.approvals()
        assert approval["status"] == "waiting_approval"
        assert any(approval["id"] in m for m in seen), seen

        await stack.press(approval["id"], "Approve")
        done = payload(await mcp.call_tool("get_approval", {"id": approval["id"]}))
        assert done["status"] == "approved" and done["decision"]["decided_by"] == "telegram:111"
        # the same request again finds the same, decided approval: nothing new is asked
        again = payload(await mcp.call_tool("request_approval", {**CHARGE, "wait_seconds": 0}))
    assert again["id"] == approval["id"] and again["status"] == "approved"
    assert len(await stack.approvals()) == 1


async def test_the_same_request_is_the_same_approval_and_a_different_one_is_not(stack: Stack) -> None:
    command, env = approval_server(stack)
    async with mcp_session(stack.tmp, command, env) as mcp:
        a = payload(await mcp.call_tool("request_approval", {**CHARGE, "wait_seconds": 0}))
        b = payload(await mcp.call_tool("request_approval", {**CHARGE, "wait_seconds": 0}))
        # same args, another title: another question (the gateway's own default key would merge them)
        c = payload(await mcp.call_tool("request_approval", {**CHARGE, "title": "Refund ACME", "wait_seconds": 0}))
        keyed = {**CHARGE, "idempotency_key": "invoice-77", "wait_seconds": 0}
        d = payload(await mcp.call_tool("request_approval", keyed))
        e = payload(await mcp.call_tool("request_approval", keyed))
        await stack.decide(c["id"], "reject", "refunds are not due")
        rejected = payload(await mcp.call_tool("get_approval", {"id": c["id"], "wait_seconds": 0}))
    assert a["id"] == b["id"] and d["id"] == e["id"] and len({a["id"], c["id"], d["id"]}) == 3
    assert (await stack.view(d["id"]))["idempotency_key"] == "invoice-77"
    assert rejected["status"] == "rejected"
    assert rejected["decision"]["outcome"] == "reject" and rejected["decision"]["comment"] == "refunds are not due"
    assert rejected["decision"]["decided_by"]  # the operator (its name format is issue 13's)


async def test_two_agents_asking_the_same_thing_get_their_own_approvals(stack: Stack) -> None:
    """Run ids and idempotency keys are per principal at the gateway (issue 13): the defaults of
    two agents' identical requests must differ, and each agent's retries must still match."""
    ids = {}
    for name, key in (("first", TEST_API_KEY), ("second", SECOND_AGENT_KEY)):
        command, env = approval_server(stack, key=key)
        async with mcp_session(stack.tmp, command, env) as mcp:
            a = payload(await mcp.call_tool("request_approval", {**CHARGE, "wait_seconds": 0}))
            b = payload(await mcp.call_tool("request_approval", {**CHARGE, "wait_seconds": 0}))
        assert a["id"] == b["id"]
        ids[name] = a["id"]
    first, second = (await stack.view(ids["first"])), (await stack.view(ids["second"]))
    assert first["id"] != second["id"] and first["run_id"] != second["run_id"]
    assert first["run_id"].startswith("mcp-") and first["idempotency_key"] != second["idempotency_key"]


BAD_INPUT = [
    ({"summary": "no title", "args": {}}, "title"),
    ({"title": "", "args": {}}, "title"),
    ({"title": "Pay", "args": [1, 2]}, "args"),
    ({"title": "Pay", "args": "amount=5"}, "args"),
    ({"title": "Pay", "policy": "no-such-policy"}, "policy"),
    ({"title": "Pay", "channels": ["telegram:"]}, "channels"),
    ({"title": "Pay", "approvers": ["bob"]}, "approvers[0]"),
    ({"title": "Pay", "wait_seconds": 601}, "wait_seconds"),
]


async def test_bad_input_is_a_tool_error_naming_the_field_and_creates_nothing(stack: Stack) -> None:
    command, env = approval_server(stack)
    async with mcp_session(stack.tmp, command, env) as mcp:
        for arguments, field in BAD_INPUT:
            text = error_text(await mcp.call_tool("request_approval", {"wait_seconds": 0, **arguments}))
            assert field in text, (arguments, text)
    assert await stack.approvals() == []


async def test_tools_have_schemas_and_permission_prompt_has_no_structured_output(stack: Stack) -> None:
    command, env = approval_server(stack)
    async with mcp_session(stack.tmp, command, env) as mcp:
        tools = {t.name: t for t in (await mcp.list_tools()).tools}
        unknown = error_text(await mcp.call_tool("get_approval", {"id": "nope", "wait_seconds": 0}))
    assert set(tools) == {"request_approval", "get_approval", "permission_prompt"}
    assert tools["request_approval"].input_schema["required"] == ["title"]
    assert tools["request_approval"].input_schema["properties"]["args"]["type"] == "object"
    assert set(tools["request_approval"].output_schema["required"]) == {"status", "id", "deadline"}
    assert tools["permission_prompt"].output_schema is None
    assert set(tools["permission_prompt"].input_schema["required"]) == {"tool_name", "input"}
    assert "404" in unknown and "not_found" in unknown, unknown
    json.dumps(tools["get_approval"].input_schema)


async def test_an_approval_with_changes_gives_the_raw_approved_args(stack: Stack) -> None:
    """The human changed the amount; the e-mail they saw was redacted and left alone: the tool
    answers the raw approved args (through the approval's resume token), not the display copy."""
    args = {"amount": 4200, "email": "billing@acme.test"}
    schema = {"type": "object", "properties": {"amount": {"type": "integer", "maximum": 5000}}}
    request = {**CHARGE, "args": args, "args_schema": schema, "editable": ["amount"], "wait_seconds": 0}
    command, env = approval_server(stack)
    async with mcp_session(stack.tmp, command, env) as mcp:
        first = payload(await mcp.call_tool("request_approval", request))
        shown = (await stack.view(first["id"]))["args"]
        assert shown["email"] == "[redacted:email]"
        body = {"outcome": "approve", "args": {**shown, "amount": 3900}}
        async with stack.http.post(
            f"{stack.url}/v1/approvals/{first['id']}/decision", json=body, headers=OPERATOR
        ) as r:
            assert r.status == 200, await r.text()
        done = payload(await mcp.call_tool("get_approval", {"id": first["id"], "wait_seconds": 0}))
    assert done["status"] == "approved"
    assert done["decision"]["args"] == {"amount": 3900, "email": "billing@acme.test"}
