"""The bot token is in every Bot API URL: a transport error must not carry it into the outbox's
stored error, the audit chain or the logs.

aiohttp's ClientResponseError (a non-HTTP answer, say from a proxy) and InvalidURL put the whole
URL in their str(); here a socket answers `garbage` to the card's sendMessage.

Below, each transport failure the adapter can meet, on real sockets and through the adapter's own
calls (BotApi, the one per card; PTB's Bot, for getMe and the CLI): nothing reachable from the
raised error (its causes and contexts, their str, repr, args and attributes, the formatted
traceback) holds the token, no exception the HTTP library built is reachable at all (what it holds
changes between versions: aiohttp 3.10 put the URL into its connect timeout), and `unsent` still
says whether the call certainly never left.
"""

from __future__ import annotations

import asyncio
import json
import socket
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest
from telegram import Bot
from telegram.error import NetworkError, TelegramError, TimedOut

from adapters.telegram.api import BotApi
from adapters.telegram.errors import TransportFailure, unsent
from adapters.telegram.request import AiohttpRequest
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.settings import Settings
from gateway.testing import FakeClock
from tests.conftest import AUTH, suspend_body
from tests.procs import free_port

TOKEN = "123456:GARBAGE-token_secret"
CHAT = -1001234567890


@pytest.fixture
async def garbage_base_url() -> AsyncIterator[str]:
    """A server that reads the request and answers a line that is not HTTP."""
    async with _answering(lambda _: b"garbage\r\n\r\n")() as url:
        yield url


def _telegram(base_url: str) -> dict[str, Any]:
    """The Telegram section of a gateway whose Bot API is `base_url`."""
    return {
        "bot_token": TOKEN,
        "webhook_secret": "hook_secret-0123456789",
        "base_url": base_url,
        "approvers": [111],
        "chats": [CHAT],
    }


async def test_a_garbage_answer_stores_no_bot_token(
    aiohttp_client: Callable[..., Any],
    settings_factory: Callable[..., Settings],
    garbage_base_url: str,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = settings_factory(telegram=_telegram(garbage_base_url))
    rt = Runtime(settings, clock=clock, owner="test")
    client = await aiohttp_client(create_app(settings, runtime=rt, background=False))
    resp = await client.post("/v1/suspend", json=suspend_body(channels=[f"telegram:{CHAT}"]), headers=AUTH)
    assert resp.status == 201, await resp.text()
    approval_id = (await resp.json())["id"]
    await rt.outbox.drain()

    events = [e for e in await rt.store.list_events(approval_id) if e.kind.startswith("delivery_")]
    assert events, "the failed post is audited"
    stored = json.dumps([e.data for e in events])
    assert "ClientResponseError" in stored  # the error is there, described by its type
    assert TOKEN not in stored and "GARBAGE" not in stored
    view = await client.get(f"/v1/approvals/{approval_id}", headers=AUTH)
    body = await view.json()
    assert "ClientResponseError" in body["deliveries"][0]["last_error"]
    assert TOKEN not in json.dumps(body)
    assert TOKEN not in caplog.text


SECRET = TOKEN.split(":")[1]  # the part that is the secret


def _reachable(exc: BaseException) -> list[BaseException]:
    """`exc` and every exception reachable from it through __cause__ and __context__."""
    seen: dict[int, BaseException] = {}
    todo = [exc]
    while todo:
        one = todo.pop()
        if id(one) not in seen:
            seen[id(one)] = one
            todo += [e for e in (one.__cause__, one.__context__) if e is not None]
    return list(seen.values())


def _assert_no_token_reachable(exc: BaseException) -> None:
    chain = _reachable(exc)
    texts = ["".join(traceback.format_exception(exc))]
    for one in chain:
        attributes = {name: getattr(one, name, None) for name in dir(one) if not name.startswith("__")}
        texts += [str(one), repr(one), repr(one.args), repr(attributes)]
    leaks = [text for text in texts if SECRET in text]
    assert not leaks, leaks[0]


Server = Callable[[], AbstractAsyncContextManager[str]]  # serves a Bot API base URL while open


@asynccontextmanager
async def _full_backlog() -> AsyncIterator[str]:
    """A port that listens but whose accept queue is full: a new connection's SYN is dropped, so
    the connect times out (no network needed)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(3):  # Linux queues backlog + 1; the rest wait in SYN retransmission
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        fillers.append(filler)
    try:
        yield f"http://127.0.0.1:{port}/bot"
    finally:
        for one in (*fillers, listener):
            one.close()


def _answering(reply: Callable[[bytes], bytes] | None) -> Server:
    """A server that reads the request, writes `reply(request line)` and hangs up (None: it never
    answers)."""

    @asynccontextmanager
    async def serve() -> AsyncIterator[str]:
        done = asyncio.Event()

        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            line = await reader.readline()
            await reader.read(65536)
            if reply is None:
                await done.wait()
            else:
                writer.write(reply(line.strip()))
                await writer.drain()
            writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            yield f"http://127.0.0.1:{port}/bot"
        finally:
            done.set()
            server.close()
            await server.wait_closed()

    return serve


def _fixed(url: str) -> Server:
    @asynccontextmanager
    async def serve() -> AsyncIterator[str]:
        yield url

    return serve


def _echo_page(status: str) -> Callable[[bytes], bytes]:
    """A proxy's error page that echoes the request line, URL and all (as squid's does)."""

    def page(line: bytes) -> bytes:
        body = b"<html>The requested URL could not be retrieved: " + line + b"</html>"
        head = f"HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {len(body)}\r\n\r\n"
        return head.encode() + body

    return page


_CUT = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"ok": tr'
# name: (the server, the raised type, what `unsent` said before the cause was scrubbed, the transport)
FAILURES: dict[str, tuple[Server, type[NetworkError], bool, Callable[[], AiohttpRequest]]] = {
    "refused": (
        lambda: _fixed(f"http://127.0.0.1:{free_port()}/bot")(),
        NetworkError,
        True,
        lambda: AiohttpRequest(1, 5.0),
    ),
    "connect timeout": (_full_backlog, TimedOut, True, lambda: AiohttpRequest(1, 5.0, connect_timeout=0.2)),
    "read timeout": (_answering(None), TimedOut, False, lambda: AiohttpRequest(1, 0.2)),  # Telegram may have acted
    "cut mid-answer": (_answering(lambda _: _CUT), NetworkError, False, lambda: AiohttpRequest(1, 5.0)),
    "not HTTP": (_answering(lambda _: b"garbage\r\n\r\n"), NetworkError, False, lambda: AiohttpRequest(1, 5.0)),
    "invalid URL": (_fixed("http://127.0.0.1:notaport/bot"), NetworkError, True, lambda: AiohttpRequest(1, 5.0)),
    # aiohttp refuses it before connecting: nothing reached Telegram, so a post may be retried
    "not an http URL": (_fixed("ftp://127.0.0.1/bot"), NetworkError, True, lambda: AiohttpRequest(1, 5.0)),
}


async def _send_message(request: AiohttpRequest, base_url: str) -> None:
    await BotApi(request, f"{base_url}{TOKEN}").send_message(CHAT, "hi")


async def _get_me(request: AiohttpRequest, base_url: str) -> None:
    await Bot(TOKEN, base_url=base_url, request=request).get_me()


Call = Callable[[AiohttpRequest, str], Awaitable[None]]


@pytest.fixture(params=[_send_message, _get_me], ids=["BotApi.sendMessage", "Bot.getMe"])
def through(request: pytest.FixtureRequest) -> Call:
    call: Call = request.param
    return call


async def _failure_of(server: Server, transport: AiohttpRequest, through: Call) -> TelegramError:
    async with server() as base_url:
        await transport.initialize()
        try:
            with pytest.raises(TelegramError) as caught:
                await through(transport, base_url)
        finally:
            await transport.shutdown()
    return caught.value


@pytest.mark.parametrize("case", FAILURES)
async def test_no_bot_token_is_reachable_from_a_transport_error(through: Call, case: str) -> None:
    server, raised, was_unsent, transport = FAILURES[case]
    exc = await _failure_of(server, transport(), through)
    assert type(exc) is raised, repr(exc)
    _assert_no_token_reachable(exc)
    foreign = [type(e) for e in _reachable(exc) if not isinstance(e, TelegramError | TransportFailure)]
    assert not foreign, f"the HTTP library's error is reachable: {foreign}"
    assert unsent(exc) is was_unsent
    cause = exc.__cause__
    assert isinstance(cause, TransportFailure) and cause.kind.startswith("aiohttp.")  # the library's type, named


@pytest.fixture
async def proxy_error_url() -> AsyncIterator[str]:
    async with _answering(_echo_page("502 Bad Gateway"))() as url:
        yield url


@pytest.mark.parametrize(("status", "was_unsent"), [("502 Bad Gateway", True), ("200 OK", False)])
async def test_a_proxy_page_echoing_the_url_leaves_no_token_in_the_error_or_the_log(
    through: Call, caplog: pytest.LogCaptureFixture, status: str, was_unsent: bool
) -> None:
    """PTB logs an answer that is not JSON whole and keeps it on its parser's error (`doc`). A 502
    is Telegram's refusal (unsent); a 200 whose body is not the Bot API's may have posted."""
    exc = await _failure_of(_answering(_echo_page(status)), AiohttpRequest(1, 5.0), through)
    assert "could not be retrieved" in exc.message or "Invalid server response" in exc.message
    if through is _send_message:  # the Bot leaves PTB's message as is (the channel scrubs it where it logs it)
        _assert_no_token_reachable(exc)
        assert unsent(exc) is was_unsent
    for one in _reachable(exc)[1:]:  # what hangs on the error
        attributes = {name: getattr(one, name, None) for name in dir(one) if not name.startswith("__")}
        assert SECRET not in f"{one!r} {one.args!r} {attributes!r}"
    assert SECRET not in caplog.text


async def test_a_proxy_page_at_start_up_logs_no_bot_token(
    aiohttp_client: Callable[..., Any],
    settings_factory: Callable[..., Settings],
    proxy_error_url: str,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """getMe at start-up goes through PTB's Bot, whose message carries the error answer's body."""
    settings = settings_factory(telegram=_telegram(proxy_error_url))
    rt = Runtime(settings, clock=clock, owner="test")
    await aiohttp_client(create_app(settings, runtime=rt, background=False))
    assert "getMe failed at start-up" in caplog.text
    assert "The requested URL could not be retrieved" in caplog.text  # the page is there, scrubbed
    assert SECRET not in caplog.text


def test_the_chain_walk_finds_what_it_looks_for() -> None:
    """The checks above would pass vacuously if the walk missed a context or an attribute."""

    class Holder(Exception):
        url = f"http://x/bot{TOKEN}/getMe"

    def raised() -> Iterator[BaseException]:
        try:
            try:
                raise Holder("no token in the message")
            except Holder:
                raise ValueError("neither") from None  # the holder stays the context
        except ValueError as exc:
            yield exc

    (exc,) = raised()
    with pytest.raises(AssertionError, match="token"):
        _assert_no_token_reachable(exc)
