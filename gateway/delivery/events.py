"""Outbound events: sign one event per Standard Webhooks and POST it to its webhook.

The body is the event's CloudEvents document exactly as stored in its outbox row (built once, in
the transition's transaction), so each retry sends the same bytes under the same `webhook-id`;
only `webhook-timestamp`, and so `webhook-signature`, are of the try. The signature is the
specification's own library's (`standardwebhooks`, the extra `events`), over
`{webhook-id}.{webhook-timestamp}.{body}` with HMAC-SHA256. A webhook with `previous_secrets`
(a rotation under way) gets one signature per secret, space-separated in `webhook-signature`
as the specification allows, the current secret's first: a receiver verifies with whichever
secret it holds.

Any 2xx acknowledges the event; anything else, a timeout or a refused connection is a failed
try, retried by the outbox (gateway/delivery/outbox.py) after the receiver's `Retry-After` or
with backoff, until `[events] give_up_after`. Redirects are not followed: a receiver that moved
is a configuration to fix, not a place to send signed data to on its word. What is logged and
recorded names the webhook, never its URL's query or its secret.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiohttp

from gateway.core.clock import Clock
from gateway.core.webhooks import retry_after
from gateway.settings.events import EventsSettings, WebhookSettings

log = logging.getLogger("gateway.events")
CONTENT_TYPE = "application/cloudevents+json; charset=utf-8"  # CloudEvents HTTP binding, structured mode
USER_AGENT = "hitl-gateway-events/1"
MAX_ANSWER = 64 * 1024  # bytes of a receiver's answer read (so the connection can be reused)


@dataclass(frozen=True, slots=True)
class Sent:
    """One try's outcome: acknowledged, or the error and the receiver's own delay, if it gave one."""

    ok: bool
    error: str | None = None
    retry_after: float | None = None


def body_of(doc: Mapping[str, Any]) -> bytes:
    """The bytes sent and signed: compact JSON, UTF-8, keys in the stored order."""
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()


class WebhookSender:
    def __init__(self, events: EventsSettings, clock: Clock, http: Callable[[], aiohttp.ClientSession]) -> None:
        from standardwebhooks.webhooks import Webhook  # the extra `events`: imported only when configured

        self.clock, self.http = clock, http
        self.timeout = aiohttp.ClientTimeout(total=events.timeout.total_seconds())
        self._hooks: dict[str, tuple[WebhookSettings, tuple[Webhook, ...]]] = {
            w.name: (w, tuple(Webhook(s) for s in w.secrets)) for w in events.webhooks
        }
        self.events = events

    def knows(self, name: str) -> bool:
        return name in self._hooks

    def headers(self, name: str, event_id: str, at: datetime, body: bytes) -> dict[str, str]:
        """The Standard Webhooks headers of one try at `at`."""
        _, signers = self._hooks[name]
        return {
            "content-type": CONTENT_TYPE,
            "user-agent": USER_AGENT,
            "webhook-id": event_id,
            "webhook-timestamp": str(int(at.timestamp())),
            "webhook-signature": " ".join(signer.sign(event_id, at, body) for signer in signers),
        }

    async def send(self, name: str, doc: Mapping[str, Any]) -> Sent:
        hook, _ = self._hooks[name]
        body = body_of(doc)
        now = self.clock.now()
        headers = self.headers(name, str(doc["id"]), now, body)
        try:
            async with self.http().post(
                hook.url, data=body, headers=headers, timeout=self.timeout, allow_redirects=False
            ) as resp:
                await resp.content.read(MAX_ANSWER)  # what a receiver says is not kept; a flood is cut
                if 200 <= resp.status < 300:
                    return Sent(True)
                error = f"HTTP {resp.status} {resp.reason or ''}".strip()
                return Sent(False, error, retry_after(resp.headers.get("Retry-After"), now))
        except TimeoutError:
            return Sent(False, f"timed out after {self.timeout.total:g}s")
        except aiohttp.ClientConnectorError as exc:
            return Sent(False, f"cannot connect: {exc.os_error.strerror or type(exc.os_error).__name__}")
        except aiohttp.ClientError as exc:
            return Sent(False, f"request failed: {type(exc).__name__}")


__all__ = ["CONTENT_TYPE", "Sent", "WebhookSender", "body_of"]
