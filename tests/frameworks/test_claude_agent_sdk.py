"""The Claude Agent SDK's `can_use_tool` as gateway approvals, end to end: the Claude Code CLI
bundled in the claude-agent-sdk wheel against a scripted fake Messages API on loopback, a real
`serve`, its card on the Telegram fake, and a press.

The CLI holds a permission request open in its live session, so the callback waits for the
decision (there is no worker to resume: see docs/integrations.md)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, create_sdk_mcp_server, query, tool
from hitl_sdk import DurableRun
from hitl_sdk.integrations.claude_agent_sdk import ClaudeApprovals

from examples.framework_common import charge
from gateway.testing import TEST_API_KEY
from tests.frameworks.anthropic_fake import INPUT, TOOL, FakeAnthropic
from tests.frameworks.conftest import StackFactory
from tests.frameworks.stack import CHANNEL, Stack
from tests.telegram.conftest import ALICE

pytestmark = pytest.mark.subprocess


def _prompt(text: str) -> Any:
    async def messages() -> Any:
        yield {"type": "user", "message": {"role": "user", "content": text}, "parent_tool_use_id": None}

    return messages()


# [docs:claude-agent-sdk]
async def pay_with_claude(run: DurableRun, pay_server: Any, env: dict[str, str], cwd: Path) -> list[str]:
    gate = ClaudeApprovals(run, channels=[CHANNEL], poll=0.05)  # one approval per permission request
    options = ClaudeAgentOptions(
        can_use_tool=gate.can_use_tool,  # waits for the decision: Allow(updated_input) or Deny(reason)
        mcp_servers={"pay": pay_server},
        tools=[],  # no built-in tools: only the gated one
        model="claude-sonnet-4-5",
        env=env,
        cwd=str(cwd),
    )
    results = []
    async with contextlib.aclosing(query(prompt=_prompt("Pay INV-1:4200"), options=options)) as messages:
        async for message in messages:  # to the end, so that the CLI exits and is reaped
            if isinstance(message, ResultMessage):
                results.append(str(message.result))
    return results


# [/docs:claude-agent-sdk]


async def _session(s: Stack, run_id: str, anthropic_url: str, tmp: Path) -> str:
    """One Claude Code session whose `pay_invoice` tool charges (journaled, keyed) once allowed."""
    async with await DurableRun.open(run_id, gateway_url=s.url, api_key=TEST_API_KEY) as run:

        @tool("pay_invoice", "Charge an invoice (amount in cents).", {"invoice": str, "amount": int})
        async def pay_invoice(args: dict[str, Any]) -> dict[str, Any]:
            text = await charge(run, s.payments_url, str(s.effects), args["invoice"], args["amount"])
            return {"content": [{"type": "text", "text": text}]}

        env = {
            "ANTHROPIC_BASE_URL": anthropic_url,
            "ANTHROPIC_API_KEY": "sk-ant-test-offline",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "HOME": str(tmp),  # the CLI's settings and transcripts stay in the test's directory
        }
        results = await pay_with_claude(run, create_sdk_mcp_server("pay", tools=[pay_invoice]), env, tmp)
    assert len(results) == 1, results
    return results[0]


@pytest.fixture
async def anthropic(aiohttp_server: Callable[..., Any]) -> tuple[FakeAnthropic, str]:
    fake = FakeAnthropic()
    server = await aiohttp_server(fake.app)
    return fake, f"http://127.0.0.1:{server.port}"


@pytest.mark.parametrize(("verb", "result"), [("Approve", "Done. charged INV-1 4200 as ch_1"), ("Reject", None)])
async def test_each_permission_request_is_an_approval(
    stack: StackFactory, anthropic: tuple[FakeAnthropic, str], tmp_path: Path, verb: str, result: str | None
) -> None:
    s = stack("", "").serve()
    session = asyncio.create_task(_session(s, f"claude-{verb}", anthropic[1], tmp_path))
    [approval] = await s.approvals(f"claude-{verb}", 1)
    assert approval["step"].startswith(f"{TOOL}:") and approval["step"].endswith(".0")  # keyed by content
    assert approval["args"] == INPUT
    assert approval["worker"] is None  # the live session takes the answer, no worker resumes
    assert s.charge_attempts() == []
    await s.press(approval, verb)
    async with asyncio.timeout(60):
        text = await session
    steps = await s.steps(f"claude-{verb}")
    assert steps[approval["step"]]["output"]["outcome"] == verb.lower()
    if verb == "Approve":
        assert text == result and s.charges() == {"INV-1": 1}
    else:  # PermissionResultDeny: the tool never ran, and the model read the reason
        assert s.charge_attempts() == [] and s.charges() == {}
        assert text.startswith("Done. ") and f"Rejected by telegram:{ALICE}" in text, text
