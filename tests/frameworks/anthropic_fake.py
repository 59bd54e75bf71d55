"""A minimal scripted Anthropic Messages API on loopback, for the Claude Code CLI that ships in
the claude-agent-sdk wheel (`ANTHROPIC_BASE_URL`). Issue 16 brings a fuller one; until it is on
main, this one speaks just what the CLI needs: `POST /v1/messages`, streamed (SSE) or not.

Script: while the last user turn carries no tool result, ask for `TOOL` with `INPUT`; then
answer "Done. " and the tool result's first text. Requests without that tool (the CLI's own side
calls) get a short text."""

from __future__ import annotations

import itertools
import json
from typing import Any

from aiohttp import web

TOOL = "mcp__pay__pay_invoice"
INPUT = {"invoice": "INV-1", "amount": 4200}


def _first_text(content: Any) -> str:
    if isinstance(content, str):
        return content.strip()
    return next((b.get("text", "") for b in content or [] if b.get("type") == "text"), "").strip()


class FakeAnthropic:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self.app = web.Application()
        self.app.router.add_post("/v1/messages", self.messages)

    def script(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        last = (body.get("messages") or [{}])[-1].get("content")
        results = [b for b in last if b.get("type") == "tool_result"] if isinstance(last, list) else []
        if results:
            return [
                {"type": "text", "text": "Done. " + " | ".join(_first_text(r.get("content")) for r in results)}
            ], "end_turn"
        if TOOL in [t.get("name") for t in body.get("tools") or []]:
            return [{"type": "tool_use", "id": f"toolu_{next(self._ids)}", "name": TOOL, "input": INPUT}], "tool_use"
        return [{"type": "text", "text": "ok"}], "end_turn"

    async def messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        blocks, stop = self.script(body)
        usage = {"input_tokens": 10, "output_tokens": 5}
        message = {"id": f"msg_{next(self._ids)}", "type": "message", "role": "assistant", "model": body["model"]}
        message |= {"content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": usage}
        if not body.get("stream"):
            return web.json_response(message)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)

        async def event(data: dict[str, Any]) -> None:
            await resp.write(f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode())

        await event({"type": "message_start", "message": {**message, "content": [], "stop_reason": None}})
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
            else:
                start, delta = {**block, "input": {}}, {"type": "input_json_delta", "partial_json": json.dumps(INPUT)}
            await event({"type": "content_block_start", "index": i, "content_block": start})
            await event({"type": "content_block_delta", "index": i, "delta": delta})
            await event({"type": "content_block_stop", "index": i})
        await event({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": usage})
        await event({"type": "message_stop"})
        await resp.write_eof()
        return resp
