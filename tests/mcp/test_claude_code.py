"""The real Claude Code: the CLI bundled in the claude-agent-sdk wheel, against the scripted fake
Anthropic API, asks `hitl-gateway mcp` through `--permission-prompt-tool`, and a human on the
fake Telegram decides.

Claude Code runs a Bash command that writes a file only with permission, so the file shows
whether (and with what input) the command ran; `permission_denials` in the CLI's JSON result
lists what was refused.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic_api import FakeAnthropicAPI, MessagesRequest, Reply, claude_cli, claude_env, say, use
from tests.mcp.conftest import Stack, approval_server

pytestmark = pytest.mark.subprocess


async def run_claude(stack: Stack, api: FakeAnthropicAPI, workdir: Path, prompt: str) -> dict[str, Any]:
    """`claude -p PROMPT --output-format json` with the hitl server as its permission prompt."""
    command, env = approval_server(stack)
    config = {"mcpServers": {"hitl": {"type": "stdio", "command": command[0], "args": command[1:], "env": env}}}
    (stack.tmp / "mcp.json").write_text(json.dumps(config))
    proc = await asyncio.create_subprocess_exec(
        str(claude_cli()),
        "-p",
        prompt,
        "--output-format",
        "json",
        "--mcp-config",
        str(stack.tmp / "mcp.json"),
        "--strict-mcp-config",
        "--permission-prompt-tool",
        "mcp__hitl__permission_prompt",
        cwd=workdir,
        env=claude_env(api.base_url, stack.tmp / "home"),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 90)
    finally:
        if proc.returncode is None:
            proc.kill()
    assert proc.returncode == 0, err.decode()[-2000:]
    return dict(json.loads(out))


@pytest.fixture
async def anthropic(aiohttp_server: Callable[..., Any]) -> Callable[..., Any]:
    async def start(*script: Any) -> FakeAnthropicAPI:
        api = FakeAnthropicAPI(script)
        server = await aiohttp_server(api.app)
        api.base_url = str(server.make_url("")).rstrip("/")
        return api

    return start


def report(request: MessagesRequest) -> Reply:
    """The model's last turn: what the tool said, so the CLI's result shows it."""
    [(tool_id, outcome)] = request.tool_results().items()
    return say(f"{tool_id}: {'error' if outcome['is_error'] else 'ok'}: {outcome['content']}")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def bash(verb: str) -> tuple[dict[str, str], str]:
    """A Bash call that needs permission (it writes a file), and its tool-use id."""
    return {"command": f"echo {verb}-by-a-human > marker.txt", "description": "Write the marker"}, f"toolu_01{verb}call"


async def bash_under_a_human(
    stack: Stack, anthropic: Callable[..., Any], workdir: Path, verb: str
) -> tuple[dict[str, Any], dict[str, Any], FakeAnthropicAPI]:
    """Claude Code asks to run `bash(verb)`; the human presses `verb` on the card. Returns the
    CLI's JSON result, the approval and the fake API."""
    command, tool_id = bash(verb)
    api = await anthropic(use("Bash", command, id=tool_id), report)
    run = asyncio.create_task(run_claude(stack, api, workdir, "Write the marker file."))
    approval = await stack.wait_for_approval(within=60, run_prefix="claude-code-")
    assert approval["args"] == command and approval["step"] == "Bash"
    await stack.press(approval["id"], verb)
    result = await run
    assert api.overruns == 0 and api.errors == []
    return result, approval, api


async def test_an_approved_bash_call_runs_with_the_approved_input(
    stack: Stack, anthropic: Callable[..., Any], workdir: Path
) -> None:
    result, approval, _ = await bash_under_a_human(stack, anthropic, workdir, "Approve")
    assert result["is_error"] is False and result["permission_denials"] == []
    assert (workdir / "marker.txt").read_text().strip() == "Approve-by-a-human"
    assert result["result"].startswith(f"{bash('Approve')[1]}: ok")
    assert (await stack.view(approval["id"]))["decision"]["decided_by"] == "telegram:111"


async def test_a_rejected_bash_call_is_in_permission_denials_and_never_runs(
    stack: Stack, anthropic: Callable[..., Any], workdir: Path
) -> None:
    result, _, _ = await bash_under_a_human(stack, anthropic, workdir, "Reject")
    command, tool_id = bash("Reject")
    assert result["permission_denials"] == [{"tool_name": "Bash", "tool_use_id": tool_id, "tool_input": command}]
    assert not (workdir / "marker.txt").exists()
    # the model was told why: the gateway's reason is the tool result Claude Code sent back
    assert result["result"].startswith(f"{tool_id}: error") and "Rejected by telegram:111" in result["result"]
