"""MCP tests: a real `hitl-gateway serve` with the fake Telegram behind it, and the MCP SDK's real
client talking to `hitl-gateway mcp` / `mcp-gate` subprocesses (stdio or streamable HTTP).

Humans decide by pressing the card's buttons on the fake Telegram (as ALICE, a configured
approver), or through the API with the operator key: never with the agent's own key.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from adapters.telegram.parse import parse_ref
from gateway.testing import TEST_API_KEY
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.procs import Gateway, free_port, write_config
from tests.telegram.conftest import ALICE, CHAT, HEADERS, SECRET, TG, TOKEN
from tests.telegram.conftest import tg_api as tg_api  # the fake Telegram, on loopback

OPERATOR_KEY = "mcp-test-operator-key-0123456789"  # its own: write_config may name others
SECOND_AGENT_KEY = "test-second-agent-key-0123456789"  # another agent: its own principal (issue 13)
OPERATOR = {"Authorization": f"Bearer {OPERATOR_KEY}"}
CHANNEL = f"telegram:{CHAT}"
UPSTREAM = Path(__file__).parents[1] / "fakes" / "mcp_upstream.py"  # a real MCP server that counts its calls
GATED = ("delete_*", "send_payment")
T = TypeVar("T")


async def eventually(probe: Callable[[], Awaitable[T]], within: float = 20.0) -> T:
    """`probe()` again and again until it gives something true (or `within` seconds pass)."""
    async with asyncio.timeout(within):
        while True:
            if value := await probe():
                return value
            await asyncio.sleep(0.05)


@dataclass
class Stack:
    """The gateway subprocess, the fake Telegram it posts to, and a human's hands."""

    gw: Gateway
    tg: FakeTelegramAPI
    http: aiohttp.ClientSession
    tmp: Path

    @property
    def url(self) -> str:
        return self.gw.url

    async def view(self, approval_id: str) -> dict[str, Any]:
        async with self.http.get(f"{self.url}/v1/approvals/{approval_id}", headers=OPERATOR) as resp:
            assert resp.status == 200, await resp.text()
            return dict(await resp.json())

    async def approvals(self, **query: str) -> list[dict[str, Any]]:
        async with self.http.get(f"{self.url}/v1/approvals", params=query, headers=OPERATOR) as resp:
            assert resp.status == 200, await resp.text()
            return list((await resp.json())["items"])

    async def wait_for_approval(self, within: float = 20.0, run_prefix: str = "", **query: str) -> dict[str, Any]:
        """The first approval matching `query` whose run id starts with `run_prefix`, once it exists."""

        async def found() -> list[dict[str, Any]]:
            return [a for a in await self.approvals(**query) if a["run_id"].startswith(run_prefix)]

        return (await eventually(found, within))[0]

    async def card(self, approval_id: str, within: float = 20.0) -> int:
        """The Telegram message id of the approval's card, once the outbox posted it."""
        async with asyncio.timeout(within):
            while True:
                cards = (await self.view(approval_id))["cards"]
                if cards and cards[0]["status"] == "done" and cards[0]["ref"]:
                    return parse_ref(cards[0]["ref"])[1]
                await asyncio.sleep(0.05)

    async def press(self, approval_id: str, verb: str, user: int = ALICE) -> None:
        """Press Approve or Reject on the card, as Telegram delivers a press to the webhook."""
        helper = TG(None, None, self.tg, None)  # type: ignore[arg-type]
        mid = await self.card(approval_id)
        update = helper.press(user, helper.data(mid, verb), mid)
        async with self.http.post(f"{self.url}/webhooks/telegram", data=json.dumps(update), headers=HEADERS) as r:
            assert r.status == 200, await r.text()
            await self.tg.apply_webhook_reply(await r.json(), update)  # Telegram runs the answer the 200 carries
            assert not self.tg.bad_replies, self.tg.bad_replies

    async def decide(self, approval_id: str, outcome: str, comment: str | None = None) -> None:
        """An operator decides through the API (with a comment, which a button press cannot give)."""
        body = {"outcome": outcome, "by": "web:ops", **({"comment": comment} if comment else {})}
        async with self.http.post(f"{self.url}/v1/approvals/{approval_id}/decision", json=body, headers=OPERATOR) as r:
            assert r.status == 200, await r.text()


def gateway_config(tmp_path: Path, tg: FakeTelegramAPI, extra: str = "") -> tuple[Path, int]:
    port = free_port()
    sections = (
        f'operator_keys = ["{OPERATOR_KEY}"]\n'
        f'[telegram]\nbot_token = "{TOKEN}"\nwebhook_secret = "{SECRET}"\nbase_url = "{tg.base_url}"\n'
        f"approvers = [{ALICE}]\nchats = [{CHAT}]\n"
        '[policies.short]\ntimeout = "1h"\non_timeout = "reject"\n'
    )
    return write_config(tmp_path / "gw.toml", f"sqlite:///{tmp_path / 'gw.db'}", port, sections + extra), port


@asynccontextmanager
async def started_stack(tmp_path: Path, tg_api: FakeTelegramAPI, extra: str = "") -> AsyncIterator[Stack]:
    """A real gateway (config `extra` added) with two agent keys, and a client session."""
    config, port = gateway_config(tmp_path, tg_api, extra)
    gw = Gateway(config, port, tmp_path / "gw.log", {"HITL_SECURITY_API_KEYS": f"{TEST_API_KEY},{SECOND_AGENT_KEY}"})
    # in a thread: the gateway asks the fake Telegram (on this loop) for getMe before it listens
    await asyncio.to_thread(gw.start)
    try:
        async with aiohttp.ClientSession() as http:
            yield Stack(gw, tg_api, http, tmp_path)
    finally:
        gw.stop()


@pytest.fixture
async def stack(tmp_path: Path, tg_api: FakeTelegramAPI) -> AsyncIterator[Stack]:
    async with started_stack(tmp_path, tg_api) as started:
        yield started


def mcp_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "gateway", *args]


@asynccontextmanager
async def mcp_session(
    tmp: Path, command: list[str], env: dict[str, str] | None = None, log: str = "mcp.log"
) -> AsyncIterator[ClientSession]:
    """The SDK's real client over stdio to a subprocess; its stderr goes to `tmp/log`."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=env or {}, cwd=str(tmp))
    with (tmp / log).open("a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def approval_server(stack: Stack, *args: str, key: str = TEST_API_KEY) -> tuple[list[str], dict[str, str]]:
    """`hitl-gateway mcp` for the stack's gateway, posting to the fake Telegram chat."""
    command = mcp_command("mcp", "--gateway", stack.url, "--channel", CHANNEL, *args)
    return command, {"HITL_API_KEY": key, **tree_under_test()}


def tree_under_test() -> dict[str, str]:
    """The SDK's stdio client passes only a few variables on: keep PYTHONPATH, so that the
    server runs the tree under test (not whatever gateway is installed)."""
    return {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}


def payload(result: CallToolResult) -> dict[str, Any]:
    """The tool's JSON: the structured content, checked against the one text block's copy."""
    assert not result.is_error, result.content
    assert len(result.content) == 1 and result.content[0].type == "text"
    data = json.loads(result.content[0].text)
    assert result.structured_content == data
    return dict(data)


def error_text(result: CallToolResult) -> str:
    assert result.is_error, result
    return "".join(getattr(c, "text", "") for c in result.content)


def counted(stack: Stack) -> list[dict[str, Any]]:
    """Every call the fake upstream got, in order."""
    path = stack.tmp / "counts.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def upstream_command(stack: Stack) -> list[str]:
    return [sys.executable, str(UPSTREAM), str(stack.tmp / "counts.jsonl")]


def gate_command(
    stack: Stack, upstream: list[str], wait: float = 1.0, gated: tuple[str, ...] = GATED, *options: str
) -> list[str]:
    return mcp_command(
        "mcp-gate",
        "--gateway",
        stack.url,
        "--channel",
        CHANNEL,
        *options,
        "--require-approval",
        *gated,
        "--wait-seconds",
        str(wait),
        "--",
        *upstream,
    )


@asynccontextmanager
async def gate(
    stack: Stack,
    wait: float = 1.0,
    upstream: list[str] | None = None,
    key: str = TEST_API_KEY,
    gated: tuple[str, ...] = GATED,
    options: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> AsyncIterator[ClientSession]:
    """`hitl-gateway mcp-gate` over stdio in front of the counting upstream; its stderr in gate.log."""
    command = gate_command(stack, upstream or upstream_command(stack), wait, gated, *options)
    env = {"HITL_API_KEY": key, "XDG_STATE_HOME": str(stack.tmp / "state"), **tree_under_test(), **(env or {})}
    async with mcp_session(stack.tmp, command, env, log="gate.log") as session:
        yield session


async def journal(stack: Stack, run_id: str) -> dict[str, dict[str, Any]]:
    async with stack.http.get(f"{stack.url}/v1/runs/{run_id}/steps", headers=OPERATOR) as resp:
        return {s["name"]: s for s in (await resp.json())["items"]}


async def journal_has(stack: Stack, run_id: str, step: str) -> bool:
    return step in await journal(stack, run_id)


def serve(command: list[str], log: Path) -> Iterator[str]:
    """Run an MCP server subprocess with `--http`; yield its /mcp URL once it listens."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")}  # no HITL_API_KEY
    env["XDG_STATE_HOME"] = str(log.parent / "state")  # a gate keeps its secret there, not in $HOME
    with log.open("w") as out:
        proc = subprocess.Popen([*command, "--http", f"127.0.0.1:{port}"], stdout=out, stderr=out, env=env)
    try:
        deadline = time.monotonic() + 20
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait(10)


@asynccontextmanager
async def http_client(
    url: str, key: str, seen: Callable[[httpx2.Response], Awaitable[None]] | None = None
) -> AsyncIterator[ClientSession]:
    """The SDK's real streamable HTTP client with its own bearer key; `seen` gets every response."""
    hooks = {"response": [seen]} if seen else {}
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, event_hooks=hooks) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session
