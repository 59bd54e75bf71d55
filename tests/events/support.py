"""A real webhook receiver for the events' tests: an aiohttp server on loopback that verifies
every request with the Standard Webhooks library itself, and answers as the test scripts it."""

from __future__ import annotations

import asyncio
import base64
import hmac
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef0123456789abcdef").decode()


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    event: dict[str, Any] | None  # the verified document; None when the signature did not verify
    answered: int


@dataclass
class Receiver:
    """`answers`: (status, headers) for the next requests, in order; then 204."""

    secret: str = SECRET
    answers: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    url: str = ""
    # False when the test's clock runs hours ahead: the signature is still checked by the
    # library (`Webhook.sign` over id, timestamp and body), only not the timestamp's freshness
    fresh_only: bool = True
    arrived: asyncio.Event = field(default_factory=asyncio.Event)  # set by each acknowledged event

    @property
    def accepted(self) -> list[dict[str, Any]]:
        """The events acknowledged (2xx), in the order they arrived."""
        return [r.event for r in self.received if r.event is not None and 200 <= r.answered < 300]

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        headers = dict(request.headers)
        try:
            event = self.verify(body, headers)
        except WebhookVerificationError:
            self.received.append(Received(headers, body, None, 400))
            return web.Response(status=400, text="bad signature")
        status, extra = self.answers.pop(0) if self.answers else (204, {})
        self.received.append(Received(headers, body, event, status))
        if 200 <= status < 300:
            self.arrived.set()
        return web.Response(status=status, headers=extra)

    def verify(self, body: bytes, headers: dict[str, str]) -> Any:
        hook = Webhook(self.secret)
        if self.fresh_only:
            return hook.verify(body, headers)
        lower = {k.lower(): v for k, v in headers.items()}
        at = datetime.fromtimestamp(int(lower["webhook-timestamp"]), UTC)
        expected = hook.sign(lower["webhook-id"], at, body)
        if not any(hmac.compare_digest(expected, s) for s in lower["webhook-signature"].split(" ")):
            raise WebhookVerificationError("No matching signature found")
        return json.loads(body)


@asynccontextmanager
async def receiving(receiver: Receiver) -> AsyncIterator[Receiver]:
    app = web.Application()
    app.router.add_post("/hook", receiver.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    receiver.url = f"http://127.0.0.1:{port}/hook"
    try:
        yield receiver
    finally:
        await runner.cleanup()


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"].removeprefix("dev.hitl-gateway.") for e in events]


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
