"""The HTTP transport: aiohttp's server, with deadlines on the request head and body (slowloris).

aiohttp 3.14 has no header or body read timeout. Its `keepalive_timeout` closes a connection that
waits for a request, but counts from the last response (or the connect) and also ends idle
keep-alive connections, which must outlive a load balancer's idle timeout. So:
- `server.header_timeout`: `HeadDeadline` (a `web.RequestHandler`, aiohttp's public per-connection
  protocol) notes when its request head began (the connection opened, or the first byte of a
  later request on it), and `sweep` closes every connection whose head is not complete this long
  after (checked every min(1 s, timeout / 4): a timer per request cost ~5 us). A head pipelined
  behind a request still being handled is left to keepalive_timeout. The front middleware
  (gateway.http.front), the first code of ours to run once aiohttp has parsed a head, tells the
  connection; when the handler is done the next byte starts the clock again.
- `server.body_timeout`: the same middleware runs the handler under this deadline (`body_within`)
  until the body has fully arrived (aiohttp's public `StreamReader.is_eof` and `wait_eof`),
  answering 408 and closing the connection at once when it runs out.
- `server.keepalive_timeout`: aiohttp's own, for idle connections between requests.
`serve` runs the application like `web.run_app`, with these connections.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from gateway.core.errors import RequestTimeout
from gateway.http.middleware import error_response
from gateway.settings import Settings
from gateway.telemetry.logs import request_id

log = logging.getLogger("gateway.http")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
ACCESS_LOG_FORMAT = '%a "%r" %s %b %Tfs rid=%{X-Request-Id}o'
EXIT_GRACE = 5.0  # seconds past server.shutdown_timeout after which a stopping gateway exits anyway
EXIT_OVERRAN = 70  # the exit status then (EX_SOFTWARE)


class HeadDeadline(web.RequestHandler):
    """One connection, whose request head must be complete within `header_timeout` seconds. It
    only notes when its current head began (no timer per request: `sweep` checks them all)."""

    def __init__(self, manager: web.Server, *, header_timeout: float, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self.header_timeout = header_timeout
        self._head_since: float | None = None
        self._in_request = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        # a connection that sends nothing at all is held no longer than one that trickles
        self._head_since = asyncio.get_running_loop().time()

    def data_received(self, data: bytes) -> None:
        if data and not self._in_request and self._head_since is None:
            self._head_since = asyncio.get_running_loop().time()  # the first byte of a new request head
        super().data_received(data)

    def head_received(self) -> None:
        self._in_request, self._head_since = True, None

    def request_done(self) -> None:
        self._in_request = False

    def overdue(self, now: float) -> bool:
        return not self._in_request and self._head_since is not None and now - self._head_since >= self.header_timeout


async def sweep(manager: web.Server, header_timeout: float) -> None:
    """Close every connection whose request head is overdue, checked a few times per timeout."""
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(min(1.0, header_timeout / 4))
        now = loop.time()
        for connection in manager.connections:
            if isinstance(connection, HeadDeadline) and connection.overdue(now):
                log.debug("closed a connection that sent no complete request head within %gs", header_timeout)
                connection.force_close()


async def body_within(request: web.Request, handler: Handler, seconds: float) -> web.StreamResponse:
    """`handler(request)` under a deadline of `seconds` for the rest of the body to arrive (the
    front middleware calls this only while a body is still arriving).

    The body is still read by the handler, where it reads it (so a webhook checks its secret
    header before reading a byte), but the handler runs under a deadline that is lifted as soon as
    the last byte of the body is in. A body still arriving when it runs out cancels the handler
    (then still waiting for that body: nothing was done yet) and gets a 408, and the connection is
    closed at once."""
    finished = False
    try:
        async with asyncio.timeout(seconds) as deadline:

            def arrived(_: asyncio.Future[None]) -> None:
                if not finished and not deadline.expired():
                    deadline.reschedule(None)  # the whole body is in: no deadline for the handler

            waiting = asyncio.ensure_future(request.content.wait_eof())
            waiting.add_done_callback(arrived)
            try:
                return await handler(request)
            finally:
                finished = True
                waiting.cancel()
    except TimeoutError:
        if not deadline.expired():
            raise  # the handler's own timeout, not the body's
        resp = error_response(RequestTimeout(f"the request body did not arrive within {seconds:g}s"))
        resp.headers["X-Request-Id"] = request_id.get()  # the front middleware's, before it is sent
        resp.force_close()
        await resp.prepare(request)  # sent now, then the connection closes: no lingering
        await resp.write_eof()  # read of a body that is still trickling in
        request.protocol.force_close()
        return resp


async def serve(
    app: web.Application, settings: Settings, announce: Callable[[], None], sock: socket.socket | None = None
) -> None:
    """Serve `app` on `sock` (bound by the caller before anything started), else on
    server.host:port, until SIGTERM or SIGINT; then shut down like `web.run_app`: stop accepting,
    on_shutdown, in-flight requests get shutdown_timeout, cleanup."""
    server = settings.server
    runner = web.AppRunner(app, shutdown_timeout=server.shutdown_timeout.total_seconds())
    await runner.setup()
    manager = runner.server
    assert manager is not None
    loop = asyncio.get_running_loop()

    def connection() -> HeadDeadline:
        return HeadDeadline(
            manager,
            loop=loop,
            header_timeout=server.header_timeout.total_seconds(),
            keepalive_timeout=server.keepalive_timeout.total_seconds(),
            access_log_format=ACCESS_LOG_FORMAT,
        )

    if sock is not None:
        listener = await loop.create_server(connection, sock=sock)
    else:
        listener = await loop.create_server(connection, server.host, server.port, reuse_address=True)
    sweeper = asyncio.create_task(sweep(manager, server.header_timeout.total_seconds()))
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        announce()
        await stop.wait()
        exit_after(server.shutdown_timeout.total_seconds() + EXIT_GRACE)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        listener.close()
        sweeper.cancel()
        await runner.cleanup()


def exit_after(seconds: float) -> threading.Timer:
    """Exit is guaranteed: once a stop was asked for, the process ends within `seconds`, whatever
    hangs (a loop, a close, a non-daemon thread that `threading._shutdown` would wait for at
    interpreter exit). A daemon timer thread, so that it never holds the exit up itself."""

    def overran() -> None:
        sys.stderr.write(f"hitl-gateway: shutdown did not finish within {seconds:g}s; exiting anyway\n")
        sys.stderr.flush()
        os._exit(EXIT_OVERRAN)

    timer = threading.Timer(seconds, overran)
    timer.daemon = True
    timer.start()
    return timer


def run(
    app: web.Application,
    settings: Settings,
    loop: asyncio.AbstractEventLoop,
    announce: Callable[[], None],
    sock: socket.socket | None = None,
) -> None:
    """`serve` on `loop`, then cancel what is left and close the loop (as `web.run_app` does)."""
    try:
        loop.run_until_complete(serve(app, settings, announce, sock))
    finally:
        left = asyncio.all_tasks(loop)
        for task in left:
            task.cancel()
        if left:
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


__all__ = ["ACCESS_LOG_FORMAT", "HeadDeadline", "body_within", "exit_after", "run", "serve", "sweep"]
