"""kill -9 of the MCP server mid-wait: it holds no state, so nothing is lost. The approval stays
in the gateway, a restarted server finds it again for the retried call, and the human's decision
reaches the agent."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

import pytest

from tests.mcp.conftest import Stack, approval_server, mcp_session, payload

pytestmark = pytest.mark.subprocess
PAY = {"title": "Pay supplier", "args": {"iban": "DE02 1203 0000 0000 2020 51", "amount": 990}, "run_id": "inv-9"}


def pids_of(marker: str) -> list[int]:
    """Processes whose command line holds `marker` (the MCP servers of this test's gateway)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if marker in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    found.append(int(entry.name))
    return found


async def test_sigkill_mid_wait_then_a_restarted_server_returns_the_same_approval(stack: Stack) -> None:
    command, env = approval_server(stack)
    marker = f"mcp --gateway {stack.url}"
    killed: list[int] = []
    async with mcp_session(stack.tmp, command, env) as mcp:
        call = asyncio.create_task(mcp.call_tool("request_approval", {**PAY, "wait_seconds": 60}))
        approval = await stack.wait_for_approval(run_id="inv-9")
        killed = pids_of(marker)
        for pid in killed:
            os.kill(pid, signal.SIGKILL)
        [outcome] = await asyncio.wait_for(asyncio.gather(call, return_exceptions=True), 20)
    assert len(killed) == 1 and pids_of(marker) == []
    assert isinstance(outcome, Exception), outcome  # the call died with the server
    assert (await stack.view(approval["id"]))["args"]["iban"] != PAY["args"]["iban"]  # cards show it redacted
    assert (await stack.view(approval["id"]))["status"] == "waiting_approval"  # intact in the gateway

    async with mcp_session(stack.tmp, command, env) as mcp:
        retried = payload(await mcp.call_tool("request_approval", {**PAY, "wait_seconds": 0}))
        assert retried["id"] == approval["id"] and retried["status"] == "waiting_approval"
        await stack.press(approval["id"], "Approve")
        done = payload(await mcp.call_tool("request_approval", {**PAY, "wait_seconds": 10}))
    assert done["id"] == approval["id"] and done["status"] == "approved"
    # the raw args the agent sent, not the redacted display copy the gateway shows on cards
    assert done["decision"]["args"] == PAY["args"]
    assert len(await stack.approvals()) == 1
