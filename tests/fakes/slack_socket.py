"""The Socket Mode side of the fake Slack: `apps.connections.open` hands out a `ws://127.0.0.1`
URL, and an aiohttp WebSocket server there speaks Slack's protocol to the REAL slack_sdk
`SocketModeClient`: `hello` on connect, `interactive` envelopes sent on demand, acks
(`{"envelope_id": ..., "payload": ...}`) collected and checked against Slack's 3-second limit.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

from aiohttp import WSMsgType, web

APP_TOKEN = "xapp-1-A0TEST-1-test-app-token"
ACK_SECONDS = 3.0  # Slack's limit: an envelope not acked by then is an error for the presser
PATH = "/socket"


class FakeSockets:
    def __init__(self) -> None:
        self.opened = 0  # WebSocket connections accepted so far
        self.urls_issued = 0  # apps.connections.open answered
        self.live: list[web.WebSocketResponse] = []
        self._requests: dict[web.WebSocketResponse, web.Request] = {}
        self.acks: dict[str, list[dict[str, Any]]] = {}
        self.unexpected: list[str] = []  # messages that are not acks of an envelope we sent
        self.latency: dict[str, float] = {}  # envelope_id -> seconds from sending it to its (last) ack
        self._sent_at: dict[str, float] = {}
        self._ids = itertools.count(1)
        self._changed = asyncio.Condition()

    def install(self, app: web.Application) -> None:
        app.router.add_get(PATH, self._serve)

    def open_url(self, base: str) -> dict[str, Any]:
        """The answer of `apps.connections.open`: a fresh URL every time, like Slack's."""
        self.urls_issued += 1
        ws_base = base.replace("http://", "ws://", 1)
        return {"ok": True, "url": f"{ws_base}{PATH}?ticket={self.urls_issued}"}

    # ---------------------------------------------------------------- test controls
    async def wait_connected(self, opened: int = 1, within: float = 10.0) -> None:
        """Until at least `opened` connections were accepted and one is live."""
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(lambda: self.opened >= opened and bool(self.live))

    async def wait_live(self, count: int, within: float = 10.0) -> None:
        """Until exactly `count` connections are live."""
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(lambda: len(self.live) == count)

    async def send(self, payload: dict[str, Any], envelope_id: str | None = None, *, to: int = -1) -> str:
        """An `interactive` envelope on live connection `to` (the newest by default), as Slack
        picks one of an app's connections; returns its envelope_id."""
        envelope_id = envelope_id or f"env-{next(self._ids)}"
        envelope = {
            "envelope_id": envelope_id,
            "type": "interactive",
            "payload": payload,
            "accepts_response_payload": payload.get("type") == "view_submission",
        }
        self._sent_at[envelope_id] = asyncio.get_running_loop().time()
        await self.live[to].send_str(json.dumps(envelope))
        return envelope_id

    async def ack(self, envelope_id: str, *, nth: int = 1) -> dict[str, Any]:
        """The `nth` ack of `envelope_id`; fails unless it came within Slack's 3 seconds."""
        left = self._sent_at[envelope_id] + ACK_SECONDS - asyncio.get_running_loop().time()
        async with asyncio.timeout(max(left, 0)), self._changed:
            await self._changed.wait_for(lambda: len(self.acks.get(envelope_id, [])) >= nth)
        return self.acks[envelope_id][nth - 1]

    async def drop(self) -> None:
        """Close every live connection from Slack's side, with a close frame."""
        for ws in list(self.live):
            await ws.close()

    def cut(self) -> None:
        """Cut every live connection's TCP stream without a close frame (a network failure)."""
        for ws in list(self.live):
            transport = self._requests[ws].transport
            if transport is not None:
                transport.abort()

    async def refresh(self) -> None:
        """Slack's `disconnect` message (it rotates connections every few hours)."""
        for ws in list(self.live):
            await ws.send_str(json.dumps({"type": "disconnect", "reason": "refresh_requested"}))

    async def stop(self) -> None:
        await self.drop()

    # ---------------------------------------------------------------- the WebSocket
    async def _serve(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_str(json.dumps({"type": "hello", "num_connections": len(self.live) + 1}))
        async with self._changed:
            self.opened += 1
            self.live.append(ws)
            self._requests[ws] = request
            self._changed.notify_all()
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    await self._received(msg.data)
        finally:
            async with self._changed:
                self.live.remove(ws)
                del self._requests[ws]
                self._changed.notify_all()
        return ws

    async def _received(self, text: str) -> None:
        data = json.loads(text)
        envelope_id = data.get("envelope_id") if isinstance(data, dict) else None
        async with self._changed:
            if envelope_id in self._sent_at:
                self.acks.setdefault(envelope_id, []).append(data)
                self.latency[envelope_id] = asyncio.get_running_loop().time() - self._sent_at[envelope_id]
            else:
                self.unexpected.append(text)
            self._changed.notify_all()
