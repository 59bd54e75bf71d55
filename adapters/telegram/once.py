"""A card is posted at most once per approval and chat, although the Bot API has no
idempotency key and no way to look a message up.

Before each `sendMessage` the channel writes a durable `post_attempt` event. An attempt is
*resolved* when the post is recorded (`card_posted`), when a later `delivery_retry` /
`delivery_failed` event of the post says Telegram certainly did not act (`unsent`: it answered
with an error, or no connection was made), or when an operator asked for a new post
(`post_resend`). A later try that finds an unresolved
attempt (the process died mid-call, a read timed out, the outbox cut the call at half its
lease) does not send again: the card is recorded as `uncertain` and adopted when someone
presses it (its callback carries the chat and message id).
"""

from __future__ import annotations

from collections.abc import Iterable

import aiohttp
import httpx
from telegram.error import NetworkError, TelegramError, TimedOut

from gateway.core.models import Event
from gateway.delivery.outbox import ATTEMPT_EVENT as ATTEMPT
from gateway.delivery.outbox import RESEND_EVENT as RESEND

ADOPTED = "card_adopted"
_RESOLVING = frozenset({"delivery_retry", "delivery_failed"})
# Transport errors raised before a single byte of the request could reach Telegram (aiohttp is
# the gateway's transport, see request.py; httpx is PTB's default one).
_NOT_SENT = (
    aiohttp.ClientConnectorError,
    aiohttp.ConnectionTimeoutError,
    aiohttp.InvalidURL,
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.UnsupportedProtocol,
)


def unresolved_attempt(events: Iterable[Event], address: str) -> Event | None:
    """The post attempt to `address` whose outcome nobody knows, if any (pure)."""
    open_attempt: Event | None = None
    for e in events:
        if e.channel != address:
            continue
        if e.kind == ATTEMPT:
            open_attempt = e
        elif e.kind in (RESEND, "card_posted") or _resolves(e):
            open_attempt = None
    return open_attempt


def _resolves(e: Event) -> bool:
    return e.kind in _RESOLVING and e.data.get("kind") == "post" and e.data.get("unsent") is True


def unsent(exc: TelegramError) -> bool:
    """Whether Telegram certainly did not act on the call that raised `exc` (pure).

    Every error built from an HTTP answer (400, 403, 429, 5xx...) is unsent: Telegram replied
    that the call failed. Transport errors are unsent only when no connection was made; a
    read timeout or a connection dropped mid-answer may follow a message that was posted.
    """
    if not isinstance(exc, NetworkError):  # BadRequest is a NetworkError, tested below
        return True
    cause = exc.__cause__
    if isinstance(cause, aiohttp.ClientError | httpx.HTTPError | TimeoutError):
        return isinstance(cause, _NOT_SENT)
    if isinstance(exc, TimedOut):
        return False
    return cause is None or isinstance(cause, TelegramError)  # an HTTP status answer (maybe unparsable)
