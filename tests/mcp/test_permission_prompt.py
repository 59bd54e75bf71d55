"""permission_prompt: Claude Code's permission-prompt-tool contract, with the SDK's real client.

Exactly one text block whose text is JSON, no structured content: allow with the approved input,
deny with the reason, and deny when nobody decides before the deadline, even under a policy
whose timeout outcome is approve.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from mcp_types import CallToolResult

from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.testing import TEST_API_KEY, FakeClock, make_settings
from tests.mcp.conftest import Stack, approval_server, eventually, mcp_session
from tests.procs import free_port
from tests.telegram.conftest import CHAT

pytestmark = pytest.mark.subprocess
BASH = {"command": "rm -rf ./build", "description": "Clean the build directory"}


def answer(result: CallToolResult) -> dict[str, Any]:
    """Claude Code accepts exactly this shape: one text block of JSON, nothing structured."""
    assert not result.is_error, result.content
    assert result.structured_content is None
    [block] = result.content
    assert block.type == "text"
    return dict(json.loads(block.text))


def prompt(tool_use_id: str) -> dict[str, Any]:
    return {"tool_name": "Bash", "input": BASH, "tool_use_id": tool_use_id}


async def test_allow_after_a_telegram_approval_carries_the_input(stack: Stack) -> None:
    command, env = approval_server(stack)
    async with mcp_session(stack.tmp, command, env) as mcp:
        call = asyncio.create_task(mcp.call_tool("permission_prompt", prompt("toolu_01allow")))
        approval = await stack.wait_for_approval(run_prefix="claude-code-")
        mid = await stack.card(approval["id"])
        card = stack.tg.message(CHAT, mid)["text"]
        assert "Bash" in card and "rm -rf ./build" in card  # the card shows the tool and its input
        assert not call.done()  # it blocks until a human decides
        await stack.press(approval["id"], "Approve")
        result = answer(await call)
    assert result == {"behavior": "allow", "updatedInput": BASH}
    assert approval["idempotency_key"] == "claude-code:toolu_01allow" and approval["args"] == BASH


async def test_deny_carries_the_reason(stack: Stack) -> None:
    command, env = approval_server(stack)
    async with mcp_session(stack.tmp, command, env) as mcp:
        call = asyncio.create_task(mcp.call_tool("permission_prompt", prompt("toolu_01deny")))
        approval = await stack.wait_for_approval(run_prefix="claude-code-")
        await stack.decide(approval["id"], "reject", "not on the release branch")
        result = answer(await call)
        # asked again for the same tool use (a retry, a restarted server): the same answer
        again = answer(await mcp.call_tool("permission_prompt", prompt("toolu_01deny")))
    assert result["behavior"] == "deny" and "not on the release branch" in result["message"]
    assert "Rejected by" in result["message"]
    assert again == result
    assert len(await stack.approvals()) == 1


async def test_deny_on_timeout_even_when_the_policy_would_approve(
    tmp_path: Path, aiohttp_server: Callable[..., Any]
) -> None:
    """The gateway's clock is a FakeClock: the deadline passes when the test says so."""
    clock = FakeClock(datetime.now(UTC))
    port = free_port()
    settings = make_settings(
        f"sqlite:///{tmp_path / 'gw.db'}",
        {
            "server": {"public_url": f"http://127.0.0.1:{port}"},
            "policies": {"lenient": {"timeout": "10m", "on_timeout": "approve"}},
        },
    )
    rt = Runtime(settings, clock=clock, owner="test")
    await aiohttp_server(create_app(settings, runtime=rt, background=False), port=port)
    command = [sys.executable, "-m", "gateway", "mcp", "--gateway", f"http://127.0.0.1:{port}", "--policy", "lenient"]
    async with mcp_session(tmp_path, command, {"HITL_API_KEY": TEST_API_KEY}) as mcp:
        call = asyncio.create_task(mcp.call_tool("permission_prompt", prompt("toolu_01late")))
        items = await eventually(rt.store.list_approvals)
        assert items[0].policy.name == "lenient"
        clock.advance(minutes=11)
        await rt.scheduler.tick(clock.now())
        assert (await rt.store.get_approval(items[0].id)).status.value == "timed_out"  # type: ignore[union-attr]
        result = answer(await asyncio.wait_for(call, 20))
    assert result["behavior"] == "deny"
    assert "deadline" in result["message"]


async def test_a_gateway_that_refuses_is_a_deny_not_a_crash(stack: Stack) -> None:
    """Fail closed: a refused or unreachable gateway means nobody approved."""
    command, env = approval_server(stack, key="not-a-valid-key-0123456789")
    async with mcp_session(stack.tmp, command, env) as mcp:
        result = answer(await mcp.call_tool("permission_prompt", prompt("toolu_01nokey")))
    assert result["behavior"] == "deny" and "401" in result["message"]
    assert await stack.approvals() == []
