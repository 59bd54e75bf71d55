"""Pure classification of Bot API failures into the outbox's DeliveryError.

Order matters: `RetryAfter` is not a `NetworkError`, while `BadRequest` and `TimedOut` are, so
they are tested first. Whether Telegram may have acted anyway (a read timeout after the request
went out) is carried for the outbox, which then never posts that card twice (see docs/telegram.md).
"""

from __future__ import annotations

import os
import warnings
from datetime import timedelta

import aiohttp
import httpx
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
    TimedOut,
)
from telegram.warnings import PTBDeprecationWarning

# PTB 22 warns on every RetryAfter unless time periods are opted in as timedelta (its future default).
os.environ.setdefault("PTB_TIMEDELTA", "true")

# Transport errors raised before a single byte of the request could reach Telegram (aiohttp is
# the gateway's transport, see request.py; httpx is PTB's default one).
from gateway.plugin import DeliveryError

_NOT_SENT = (
    aiohttp.ClientConnectorError,
    aiohttp.ConnectionTimeoutError,
    aiohttp.InvalidURL,
    aiohttp.NonHttpUrlClientError,  # an ftp:// (or other) base URL: refused before any connection
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.UnsupportedProtocol,
)


class TransportFailure(Exception):
    """The cause our transport (request.py) gives PTB's NetworkError or TimedOut, in place of the
    client library's error. That one holds the Bot API URL, and with it the bot token, in its str()
    (aiohttp's ConnectionTimeoutError, InvalidURL), its args, its attributes (`request_info`) or its
    own causes, and a logged traceback or an error reporter walking `__cause__` and `__context__`
    would print it. This stand-in keeps only the library's type name, a scrubbed message, and
    whether the call certainly never left (decided from the original error when it is raised)."""

    def __init__(self, kind: str, message: str, *, unsent: bool) -> None:
        super().__init__(message)
        self.kind, self.unsent = kind, unsent

    @classmethod
    def of(cls, err: BaseException, kind: str, message: str) -> TransportFailure:
        return cls(kind, message, unsent=isinstance(err, _NOT_SENT))


def unsent(exc: TelegramError) -> bool:
    """Whether Telegram certainly did not act on the call that raised `exc`.

    Every error built from an HTTP answer (400, 403, 429, 5xx...) is unsent: Telegram replied
    that the call failed. Transport errors are unsent only when no connection was made; a
    read timeout or a connection dropped mid-answer may follow a message that was posted.
    """
    if not isinstance(exc, NetworkError):  # BadRequest is a NetworkError, tested below
        return True
    cause = exc.__cause__
    if isinstance(cause, TransportFailure):
        return cause.unsent
    if isinstance(cause, aiohttp.ClientError | httpx.HTTPError | TimeoutError):
        return isinstance(cause, _NOT_SENT)
    if isinstance(exc, TimedOut):
        return False
    return cause is None or isinstance(cause, TelegramError)  # an HTTP status answer (maybe unparsable)


def retry_after_seconds(exc: RetryAfter) -> float:
    """The server's delay, exactly (PTB 22 warns when the attribute is read as an int)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def not_modified(exc: TelegramError) -> bool:
    return isinstance(exc, BadRequest) and "message is not modified" in exc.message.lower()


def delivery_error(exc: TelegramError) -> DeliveryError:
    """Map a Bot API error: flood control and network trouble retry, the rest is terminal."""
    message, sent = f"telegram: {exc.message}", not unsent(exc)
    if isinstance(exc, RetryAfter):
        return DeliveryError(message, transient=True, retry_after=retry_after_seconds(exc), unsent=True)
    if isinstance(exc, Forbidden | BadRequest | InvalidToken | ChatMigrated):
        return DeliveryError(message, transient=False, unsent=True)
    # 5xx, TimedOut, connection errors; Conflict and the like
    return DeliveryError(message, transient=True, unsent=not sent, uncertain=sent)
