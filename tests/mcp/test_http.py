"""Streamable HTTP: every MCP client brings its own bearer key and the server forwards it, so
each client is its own principal at the gateway. The MCP process has no key of its own here."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import aiohttp
import pytest

from gateway.testing import TEST_API_KEY
from tests.mcp.conftest import CHANNEL, UPSTREAM, Stack, error_text, mcp_command, payload, serve
from tests.mcp.conftest import http_client as client

pytestmark = pytest.mark.subprocess
STRANGER = "not-a-key-of-this-gateway-000"


@pytest.fixture
def mcp_url(stack: Stack) -> Iterator[str]:
    yield from serve(mcp_command("mcp", "--gateway", stack.url, "--channel", CHANNEL), stack.tmp / "mcp-http.log")


@pytest.mark.parametrize("key", [None, STRANGER])
async def test_no_key_or_a_key_the_gateway_refuses_is_a_401_before_mcp(mcp_url: str, key: str | None) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with aiohttp.ClientSession() as http, http.post(mcp_url, json=body, headers=headers) as resp:
        assert resp.status == 401
        assert resp.headers["WWW-Authenticate"].startswith("Bearer")
        assert (await resp.json())["error"]["code"] == "unauthorized"


async def test_a_client_works_with_its_own_key(stack: Stack, mcp_url: str) -> None:
    async with client(mcp_url, TEST_API_KEY) as agent:
        asked = payload(await agent.call_tool("request_approval", {"title": "Deploy", "wait_seconds": 0}))
        await stack.press(asked["id"], "Approve")
        done = payload(await agent.call_tool("get_approval", {"id": asked["id"], "wait_seconds": 10}))
    assert done["status"] == "approved" and done["decision"]["decided_by"] == "telegram:111"
    assert len(await stack.approvals()) == 1


async def test_the_gate_over_http_serves_only_keys_the_gateway_takes(stack: Stack) -> None:
    counts = stack.tmp / "counts.jsonl"
    options = ["--gateway", stack.url, "--channel", CHANNEL, "--require-approval", "delete_*", "--wait-seconds", "0"]
    command = mcp_command("mcp-gate", *options, "--upstream", sys.executable, str(UPSTREAM), str(counts))
    url = next(urls := serve(command, stack.tmp / "gate-http.log"))
    try:
        async with aiohttp.ClientSession() as http:
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            async with http.post(url, json=body, headers={"Authorization": f"Bearer {STRANGER}"}) as resp:
                assert resp.status == 401  # an ungated pass-through needs a real key too
        async with client(url, TEST_API_KEY) as agent:
            read = await agent.call_tool("read_file", {"path": "/a"})
            gated = error_text(await agent.call_tool("delete_file", {"path": "/a"}))
    finally:
        urls.close()
    assert not read.is_error and "Waiting for a human" in gated
    assert [a["step"] for a in await stack.approvals()] == ["delete_file"]
    assert counts.read_text().count("\n") == 1  # the read only
