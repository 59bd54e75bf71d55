"""A scripted fake of the Anthropic Messages API on loopback, for the real Claude Code CLI.

Point a client at it with `ANTHROPIC_BASE_URL=<base_url>` and any `ANTHROPIC_API_KEY`. It is
used by the MCP permission-prompt tests (the CLI bundled in the claude-agent-sdk wheel) and by
the claude-agent-sdk `can_use_tool` tests; `claude_env()` builds the CLI's environment.

- `POST /v1/messages` answers as the real API does. With `"stream": true` it sends Server-Sent
  Events (`message_start`, `content_block_start`, `ping`, `content_block_delta` in small pieces of
  `text_delta` / `input_json_delta`, `content_block_stop`, `message_delta` with the stop reason and
  usage, `message_stop`); otherwise one JSON message.
- `POST /v1/messages/count_tokens` gives a rough count.
- It checks what the real API checks first: an API key (`x-api-key`, or `Authorization: Bearer`),
  `anthropic-version`, and `model`, `max_tokens` and `messages` in the body. A failure is a
  401 / 400 with the real error shape: `{"type": "error", "error": {"type", "message"}}`.
- A reply may only use a tool that the request offers (a script bug is a 500, recorded in
  `errors`).

A script drives the agent's turns: replies (or functions of the request that return one), used
one per *agent* request, one that offers tools. Requests the CLI makes on its own without tools
(titles, summaries) get `side` (by default a short text). When the script has no more replies,
the fake ends the turn with a text and counts an `overrun`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

Block = dict[str, Any]


def text(value: str) -> Block:
    return {"type": "text", "text": value}


def tool_use(name: str, tool_input: dict[str, Any], id: str | None = None) -> Block:
    """A tool_use block; the id looks like the real ones (`toolu_01` + 22 characters)."""
    return {"type": "tool_use", "id": id or "toolu_01" + secrets.token_hex(11), "name": name, "input": tool_input}


@dataclass(frozen=True)
class Reply:
    blocks: Sequence[Block]
    stop_reason: str | None = None  # default: "tool_use" when a block uses a tool, else "end_turn"

    @property
    def stop(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if any(b["type"] == "tool_use" for b in self.blocks) else "end_turn"


def say(value: str) -> Reply:
    return Reply([text(value)])


def use(name: str, tool_input: dict[str, Any], id: str | None = None) -> Reply:
    return Reply([tool_use(name, tool_input, id)])


@dataclass(frozen=True)
class MessagesRequest:
    """One request as the fake received it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def tools(self) -> list[str]:
        return [str(t.get("name")) for t in self.body.get("tools") or []]

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    def tool_results(self) -> dict[str, dict[str, Any]]:
        """tool_use_id -> {"content": the text, "is_error": bool}, from every user message."""
        out: dict[str, dict[str, Any]] = {}
        for message in self.body.get("messages") or []:
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    out[block["tool_use_id"]] = {
                        "content": _flatten(block.get("content")),
                        "is_error": bool(block.get("is_error")),
                    }
        return out


Turn = Reply | Callable[[MessagesRequest], Reply]


@dataclass
class FakeAnthropicAPI:
    script: Iterable[Turn] = ()
    side: Callable[[MessagesRequest], Reply] = field(default=lambda request: say("ok"))
    base_url: str = ""  # set by the test once the server listens
    requests: list[MessagesRequest] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    overruns: int = 0

    def __post_init__(self) -> None:
        self._turns = iter(self.script)
        self._ids = itertools.count(1)
        self._changed = asyncio.Event()
        self.app = web.Application()
        self.app.router.add_post("/v1/messages", self._messages)
        self.app.router.add_post("/v1/messages/count_tokens", self._count_tokens)

    @property
    def agent_requests(self) -> list[MessagesRequest]:
        return [r for r in self.requests if r.tools]

    async def wait_for_agent_requests(self, n: int, within: float = 30.0) -> list[MessagesRequest]:
        async with asyncio.timeout(within):
            while len(self.agent_requests) < n:
                self._changed.clear()
                await self._changed.wait()
        return self.agent_requests

    # ---------------------------------------------------------------- HTTP
    async def _messages(self, request: web.Request) -> web.StreamResponse:
        checked = await self._check(request)
        if isinstance(checked, web.Response):
            return checked
        self.requests.append(checked)
        self._changed.set()
        reply = self._reply(checked)
        unknown = [b["name"] for b in reply.blocks if b["type"] == "tool_use" and b["name"] not in checked.tools]
        if unknown:
            self.errors.append(f"the script used {unknown[0]!r}, which the request does not offer")
            return _error(500, "api_error", self.errors[-1])
        message = self._message(checked, reply)
        if not checked.stream:
            return web.json_response(message)
        return await self._stream(request, message)

    async def _count_tokens(self, request: web.Request) -> web.Response:
        checked = await self._check(request, needs_max_tokens=False)
        if isinstance(checked, web.Response):
            return checked
        return web.json_response({"input_tokens": _tokens(checked.body)})

    async def _check(self, request: web.Request, *, needs_max_tokens: bool = True) -> MessagesRequest | web.Response:
        key = request.headers.get("x-api-key") or request.headers.get("Authorization", "").removeprefix("Bearer ")
        if not key.strip():
            return _error(401, "authentication_error", "x-api-key header is required")
        if "anthropic-version" not in request.headers:
            return _error(400, "invalid_request_error", "anthropic-version: header is required")
        try:
            body = json.loads(await request.read())
        except ValueError:
            return _error(400, "invalid_request_error", "the request body is not valid JSON")
        required = ("model", "messages", "max_tokens") if needs_max_tokens else ("model", "messages")
        for name in required:
            if name not in body:
                return _error(400, "invalid_request_error", f"{name}: Field required")
        if not body["messages"]:
            return _error(400, "invalid_request_error", "messages: at least one message is required")
        return MessagesRequest(request.path, dict(request.headers), body)

    def _reply(self, request: MessagesRequest) -> Reply:
        if not request.tools:
            return self.side(request)
        turn = next(self._turns, None)
        if turn is None:
            self.overruns += 1
            return say("(the fake's script has no more turns)")
        return turn(request) if callable(turn) else turn

    def _message(self, request: MessagesRequest, reply: Reply) -> dict[str, Any]:
        return {
            "id": f"msg_01{next(self._ids):022d}",
            "type": "message",
            "role": "assistant",
            "model": request.body["model"],
            "content": list(reply.blocks),
            "stop_reason": reply.stop,
            "stop_sequence": None,
            "usage": {"input_tokens": _tokens(request.body), "output_tokens": _tokens(list(reply.blocks))},
        }

    async def _stream(self, request: web.Request, message: dict[str, Any]) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        start = {**message, "content": [], "stop_reason": None, "usage": {**message["usage"], "output_tokens": 1}}
        await _event(resp, "message_start", {"type": "message_start", "message": start})
        await _event(resp, "ping", {"type": "ping"})
        for index, block in enumerate(message["content"]):
            for name, data in _block_events(index, block):
                await _event(resp, name, data)
        delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
        usage = {"output_tokens": message["usage"]["output_tokens"]}
        await _event(resp, "message_delta", {"type": "message_delta", "delta": delta, "usage": usage})
        await _event(resp, "message_stop", {"type": "message_stop"})
        await resp.write_eof()
        return resp


def _block_events(index: int, block: Block) -> Iterable[tuple[str, dict[str, Any]]]:
    """A block as the real stream sends it: an empty start, the content in pieces, a stop."""
    if block["type"] == "text":
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": text("")}
        pieces = [{"type": "text_delta", "text": part} for part in _pieces(block["text"], 16)]
    else:
        head = {**block, "input": {}}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": head}
        raw = json.dumps(block["input"])
        pieces = [{"type": "input_json_delta", "partial_json": part} for part in _pieces(raw, 24)]
    for delta in pieces:
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def _pieces(value: str, size: int) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


async def _event(resp: web.StreamResponse, name: str, data: dict[str, Any]) -> None:
    await resp.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())


def _error(status: int, kind: str, message: str) -> web.Response:
    return web.json_response({"type": "error", "error": {"type": kind, "message": message}}, status=status)


def _tokens(value: Any) -> int:
    return max(1, len(json.dumps(value)) // 4)


def _flatten(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def claude_cli() -> Path:
    """The Claude Code CLI that ships inside the claude-agent-sdk wheel."""
    import claude_agent_sdk

    return Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"


def claude_env(base_url: str, home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """An environment in which the CLI talks only to the fake: its own HOME (config and
    sessions), a dummy key, and no telemetry, error reports or update checks."""
    home.mkdir(parents=True, exist_ok=True)
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR")}
    return (
        keep
        | {
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": "sk-ant-test-0000",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
        }
        | (extra or {})
    )
