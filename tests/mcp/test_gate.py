"""mcp-gate in front of a real small MCP server that counts its calls (tests/fakes/mcp_upstream.py).

A gated tool runs once after approval; a retried call after the forward is answered from the
gateway's journal; a rejected call never reaches the upstream; an ungated one passes through;
and a client that gives up mid-forward does not cut the forward off.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from tests.fakes.telegram_api import FakeTelegramAPI
from tests.mcp.conftest import (
    SECOND_AGENT_KEY,
    UPSTREAM,
    Stack,
    counted,
    error_text,
    eventually,
    gate,
    journal,
    journal_has,
    mcp_session,
    started_stack,
)
from tests.procs import free_port

pytestmark = pytest.mark.subprocess


async def test_a_gated_tool_runs_once_after_approval_and_a_retry_gets_the_journaled_result(stack: Stack) -> None:
    async with gate(stack) as mcp:
        waiting = error_text(await mcp.call_tool("delete_file", {"path": "/srv/old"}))
        [approval] = await stack.approvals()
        assert "Waiting for a human" in waiting and approval["id"] in waiting
        assert approval["args"] == {"path": "/srv/old"} and approval["step"] == "delete_file"
        assert counted(stack) == []  # nothing reached the upstream yet

        await stack.press(approval["id"], "Approve")
        first = await mcp.call_tool("delete_file", {"path": "/srv/old"})
        retried = await mcp.call_tool("delete_file", {"path": "/srv/old"})
    assert not first.is_error and first.structured_content == {"deleted": "/srv/old"}
    assert retried.model_dump() == first.model_dump()
    assert counted(stack) == [{"tool": "delete_file", "args": {"path": "/srv/old"}}]
    steps = await journal(stack, approval["run_id"])
    assert (
        set(steps) == {"claim", "forward"}
        and steps["forward"]["output"]["structuredContent"] == first.structured_content
    )
    assert len(await stack.approvals()) == 1


async def test_another_agents_same_call_needs_its_own_approval(stack: Stack) -> None:
    """One agent's approved, forwarded call is not another's: the second agent gets no journaled
    result it was never approved for, and waits for its own human."""
    async with gate(stack) as mcp:
        error_text(await mcp.call_tool("delete_file", {"path": "/srv/a"}))
        [approval] = await stack.approvals()
        await stack.press(approval["id"], "Approve")
        assert not (await mcp.call_tool("delete_file", {"path": "/srv/a"})).is_error
    async with gate(stack, key=SECOND_AGENT_KEY) as other:
        waiting = error_text(await other.call_tool("delete_file", {"path": "/srv/a"}))
    assert "Waiting for a human" in waiting
    assert len(await stack.approvals()) == 2 and len(counted(stack)) == 1


async def test_a_rejected_call_never_reaches_the_upstream(stack: Stack) -> None:
    payment = {"to": "mallory", "amount": 10_000}
    async with gate(stack) as mcp:
        error_text(await mcp.call_tool("send_payment", payment))
        [approval] = await stack.approvals()
        await stack.press(approval["id"], "Reject")
        refused = error_text(await mcp.call_tool("send_payment", payment))
        again = error_text(await mcp.call_tool("send_payment", payment))
    assert "Not forwarded: Rejected by telegram:111" in refused and again == refused
    assert counted(stack) == []
    assert await journal(stack, approval["run_id"]) == {}


async def test_a_client_that_gives_up_mid_forward_does_not_cut_it_off(stack: Stack) -> None:
    """The forward is shielded from the client's cancel: it finishes and is journaled, and the
    retry gets that one result; without the shield the retry could only say 'unknown'."""
    payment = {"to": "bob", "amount": 25, "delay": 2.0}
    async with gate(stack) as mcp:
        error_text(await mcp.call_tool("send_payment", payment))
        [approval] = await stack.approvals()
        await stack.press(approval["id"], "Approve")
        with pytest.raises(MCPError):
            await mcp.call_tool("send_payment", payment, read_timeout_seconds=0.8)
        await eventually(lambda: journal_has(stack, approval["run_id"], "forward"))
        retried = await mcp.call_tool("send_payment", payment)
    assert retried.structured_content == {"paid": 25, "to": "bob", "receipt": "rcpt-bob-25"}
    assert len(counted(stack)) == 1


@pytest.fixture
def http_upstream(tmp_path: Path) -> Iterator[str]:
    """The same upstream over streamable HTTP, as its own process."""
    port = free_port()
    log = (tmp_path / "upstream.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, str(UPSTREAM), str(tmp_path / "counts.jsonl"), "--http", str(port)], stdout=log, stderr=log
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait(10)
        log.close()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_tools_are_listed_unchanged_and_ungated_calls_pass_through(
    stack: Stack, transport: str, request: pytest.FixtureRequest
) -> None:
    counts = str(stack.tmp / "counts.jsonl")
    upstream = (
        [request.getfixturevalue("http_upstream")] if transport == "http" else [sys.executable, str(UPSTREAM), counts]
    )
    direct_command = [sys.executable, str(UPSTREAM), str(stack.tmp / "direct.jsonl")]
    async with mcp_session(stack.tmp, direct_command, log="direct.log") as direct:
        expected = (await direct.list_tools()).model_dump()
    async with gate(stack, upstream=upstream) as mcp:
        listed = (await mcp.list_tools()).model_dump()
        read = await mcp.call_tool("read_file", {"path": "/etc/motd"})
        error_text(await mcp.call_tool("delete_file", {"path": "/tmp/x"}))  # gated on this transport too
    assert listed == expected
    assert not read.is_error and read.content[0].text == "contents of /etc/motd"  # type: ignore[union-attr]
    assert counted(stack) == [{"tool": "read_file", "args": {"path": "/etc/motd"}}]
    assert [a["step"] for a in await stack.approvals()] == ["delete_file"]


ROUTING_RULE = """
[policies.ops]
timeout = "2h"

[[rule]]
name = "deletes-to-ops"
when = 'step.startsWith("delete_")'
then = "ask"
policy = "ops"
channels = ["web"]
"""


async def test_a_call_a_rule_routed_elsewhere_runs_once_approved(tmp_path: Path, tg_api: FakeTelegramAPI) -> None:
    """An operator's rule sends the gate's deletes to another policy and channel: once approved
    there, the call runs (before: 'Not forwarded: ... (channels differs)', whoever approved)."""
    async with started_stack(tmp_path, tg_api, ROUTING_RULE) as stack, gate(stack) as mcp:
        assert "Waiting for a human" in error_text(await mcp.call_tool("delete_file", {"path": "/srv/old"}))
        [approval] = await stack.approvals()
        assert approval["channels"] == ["web"] and approval["policy"]["name"] == "ops"
        await stack.decide(approval["id"], "approve")
        done = await mcp.call_tool("delete_file", {"path": "/srv/old"})
        assert not done.is_error, done.content
        assert counted(stack) == [{"tool": "delete_file", "args": {"path": "/srv/old"}}]
