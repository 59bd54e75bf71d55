"""The MCP gate's own-approval check against an escalated approval, with the MCP SDK's real
client, a real `hitl-gateway serve` and the counting upstream.

The gate compares the approval it is handed with the suspend it sent, channels included when it
named any (`--channel`). An escalation adds the policy's `escalate_to` to the approval's
channels, so the gate accepts those too once the approval shows an escalation: a gated call
approved after its escalation is forwarded (it was refused as "channels differs" on every
retry). The escalation is the policy's real 2 s timeout: the served gateway has no injected
clock.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fakes.telegram_api import FakeTelegramAPI
from tests.mcp.conftest import Stack, counted, error_text, eventually, gate, started_stack
from tests.mcp.conftest import tg_api as tg_api

pytestmark = pytest.mark.subprocess
ESCALATING = (
    '[policies.esc]\ntimeout = "2s"\non_timeout = "escalate"\nescalate_to = ["web"]\nescalation_timeout = "1h"\n'
)


@pytest.fixture
async def stack(tmp_path: Path, tg_api: FakeTelegramAPI):  # type: ignore[no-untyped-def]
    async with started_stack(tmp_path, tg_api, ESCALATING) as started:
        yield started


async def test_an_escalated_then_approved_gated_call_is_forwarded(stack: Stack) -> None:
    async with gate(stack, options=("--policy", "esc")) as mcp:
        error_text(await mcp.call_tool("send_payment", {"to": "bob", "amount": 5}))  # waiting
        [approval] = await stack.approvals()

        async def escalated() -> Any:
            [now] = await stack.approvals()
            return now if "web" in now["channels"] else None

        await eventually(escalated)
        await stack.decide(approval["id"], "approve")
        result = await mcp.call_tool("send_payment", {"to": "bob", "amount": 5})
    text = "".join(getattr(c, "text", "") for c in result.content)
    assert not result.is_error and len(counted(stack)) == 1, f"an honest, escalated approval: {text}"
