"""python-telegram-bot's transport on aiohttp instead of httpx.

aiohttp is already a core dependency. Under the full-cycle load (bench b) a third of the
gateway's Python time went to httpx/httpcore/anyio connection-pool bookkeeping for three Bot
API calls per card; this class is PTB's documented extension point (`BaseRequest`): it only
moves bytes. PTB still maps every error answer to its exceptions (`BaseRequest.post`).

`call` is the light path for the calls made per card and per press (`api.py`): a form encoded
as PTB encodes it, through the same `post` (so the same errors), and the answer's JSON `result`
back, without `Bot` turning it into PTB objects. PTB's `RequestData` cannot be built outside PTB
(its parameters are a class of the private `telegram.request._requestparameter`), so the form
travels beside `post`, in a context variable that only `call` sets, to our own `do_request`:
`post` awaits `do_request` in the caller's context, so each call sees its own form.

A transport error's message names only its type and what the server said, never the URL: the
URL holds the bot token, and this message reaches the outbox's stored errors, the audit chain and
the logs (`describe`, `scrub`). Nor is the library's own error reachable from what is raised (not
its `__cause__`, not its `__context__`): that one holds the URL, so a logged traceback would print
the token. Its cause is an `errors.TransportFailure` instead, which says whether the call never
left (no connection: `errors.unsent`) or may have reached Telegram (a read timeout, a dropped
connection).
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

import aiohttp
from telegram.error import NetworkError, TelegramError, TimedOut
from telegram.request import BaseRequest, RequestData

from adapters.telegram.errors import TransportFailure

_FORM: ContextVar[bytes | None] = ContextVar("telegram_form", default=None)
_FORM_HEADERS = {"User-Agent": BaseRequest.USER_AGENT, "Content-Type": "application/x-www-form-urlencoded"}
# quote_plus's byte for byte, as a table: aiohttp's FormData (urlencode, then quote_plus's Python
# loop over every byte, and a MultipartWriter with a uuid4 boundary it never uses) took about 70 us
# per card of the gateway's CPU; this writes the same bytes in about a third of that.
_SAFE = frozenset((string.ascii_letters + string.digits + "_.-~").encode())
_QUOTED = [chr(b) if b in _SAFE else "+" if b == 32 else f"%{b:02X}" for b in range(256)]


def urlencoded(form: Mapping[str, str]) -> bytes:
    """`form` as application/x-www-form-urlencoded, byte for byte what `urllib.parse.urlencode`
    (and so aiohttp's FormData, and PTB's own transport) writes."""
    quote = _QUOTED.__getitem__
    return "&".join(
        f"{''.join(map(quote, k.encode()))}={''.join(map(quote, v.encode()))}" for k, v in form.items()
    ).encode("ascii")


def _seconds(value: object, default: float | None) -> float | None:
    """A timeout PTB passed: `BaseRequest.DEFAULT_NONE` (PTB's documented "not set" marker,
    checked with `is`) means ours."""
    if value is BaseRequest.DEFAULT_NONE:
        return default
    return None if value is None else float(value)  # type: ignore[arg-type]


def scrub(text: str, url: str) -> str:
    """`text` without the Bot API URL `url` (`<base>/bot<token>/<method>`), its base or its token:
    whatever a server, a proxy or a library echoed back."""
    base = url.rsplit("/", 1)[0]
    for secret in (url, base, base.rsplit("/bot", 1)[-1] if "/bot" in base else ""):
        if len(secret) >= 8:  # a short fragment would be no secret and would mangle the text
            text = text.replace(secret, "<bot api>")
    return text


def describe(err: BaseException, url: str) -> str:
    """A transport error for a message: its type and the server's status line, never its URL.
    `ClientResponseError` and `InvalidURL` put the URL in their str(); the others are scrubbed."""
    name = _kind(err)
    if isinstance(err, aiohttp.InvalidURL):
        return f"{name}: an invalid Bot API URL"
    if isinstance(err, aiohttp.ClientResponseError):
        return scrub(f"{name}: {err.status}, {err.message}", url)
    return scrub(f"{name}: {err}", url)


def _kind(err: BaseException) -> str:
    return f"aiohttp.{type(err).__name__}" if isinstance(err, aiohttp.ClientError) else type(err).__qualname__


def failure(err: Exception, url: str) -> NetworkError:
    """PTB's error for a request that failed with `err` (TimedOut for a timeout, else NetworkError,
    as PTB's own transport maps them), caused by a scrubbed `TransportFailure` instead of `err`."""
    message = describe(err, url)
    exc: NetworkError
    if isinstance(err, aiohttp.ConnectionTimeoutError):
        exc = TimedOut("Connect or pool timeout: the request was *not* sent to Telegram")
    elif isinstance(err, TimeoutError):
        exc = TimedOut()
    elif isinstance(err, aiohttp.ClientError):
        exc = NetworkError(message)
    else:  # what PTB's `post` wraps in a NetworkError, with PTB's words but a scrubbed message
        exc = NetworkError(f"Unknown error in HTTP implementation: {message}")
    exc.__cause__ = TransportFailure.of(err, _kind(err), message)
    return exc


class AiohttpRequest(BaseRequest):
    __slots__ = ("_connect", "_limit", "_read", "_session")

    def __init__(self, pool_size: int, read_timeout: float, connect_timeout: float = 5.0) -> None:
        self._limit, self._read, self._connect = pool_size, read_timeout, connect_timeout
        self._session: aiohttp.ClientSession | None = None

    @property
    def read_timeout(self) -> float | None:
        return self._read

    async def initialize(self) -> None:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=self._limit))

    async def shutdown(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()

    @staticmethod
    def parse_json_payload(payload: bytes) -> dict[str, Any]:
        """PTB's parsing (its documented override point) and PTB's error, except that an answer
        that is not JSON is neither logged (PTB logs it whole, at ERROR) nor kept on the error's
        cause (`JSONDecodeError.doc`): a proxy's error page may echo the URL, and so the token."""
        try:
            parsed: dict[str, Any] = json.loads(payload.decode("utf-8", "replace"))
            return parsed
        except json.JSONDecodeError as exc:
            why = exc.msg  # only what the parser expected, never the text
        raise TelegramError("Invalid server response") from ValueError(why)

    async def call(self, url: str, form: dict[str, str]) -> object:
        """POST `form` (application/x-www-form-urlencoded, as PTB sends it) to `url`: the answer's
        decoded `result`, or PTB's TelegramError for an error answer or a transport failure."""
        token = _FORM.set(urlencoded(form))
        try:
            return await self.post(url)
        finally:
            _FORM.reset(token)

    async def do_request(
        self,
        url: str,
        method: str,
        request_data: RequestData | None = None,
        read_timeout: object = BaseRequest.DEFAULT_NONE,
        write_timeout: object = BaseRequest.DEFAULT_NONE,
        connect_timeout: object = BaseRequest.DEFAULT_NONE,
        pool_timeout: object = BaseRequest.DEFAULT_NONE,
    ) -> tuple[int, bytes]:
        if self._session is None or self._session.closed:
            raise RuntimeError("AiohttpRequest is not initialized")
        timeout = aiohttp.ClientTimeout(
            total=None,
            connect=_seconds(pool_timeout, self._connect),  # waiting for a pooled connection + connecting
            sock_connect=_seconds(connect_timeout, self._connect),
            sock_read=_seconds(read_timeout, self._read),
        )
        body: aiohttp.FormData | dict[str, str] | bytes | None = _FORM.get() if request_data is None else None
        headers = _FORM_HEADERS if body is not None else {"User-Agent": self.USER_AGENT}
        if request_data is not None:
            body = dict(request_data.json_parameters)
            if request_data.contains_files:  # PTB's multipart: {field: (filename, bytes, mime type)}
                form = aiohttp.FormData(body)
                for field, (filename, content, mime) in request_data.multipart_data.items():
                    form.add_field(field, content, filename=filename, content_type=mime)
                body = form
        try:
            async with self._session.request(method, url, data=body, timeout=timeout, headers=headers) as resp:
                return resp.status, await resp.read()
        except Exception as err:  # a CancelledError is no failure of the call: it goes through as is
            error = failure(err, url)
        # Raised out of the except block, so that `err` is not its __context__ either: nothing the
        # library built (the URL, so the token) can be reached from the error PTB passes on.
        raise error
