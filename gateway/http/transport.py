"""The HTTP transport: aiohttp's server, with deadlines on the request head and body (slowloris).

aiohttp 3.14 has no header or body read timeout. Its `keepalive_timeout` closes a connection that
waits for a request, but counts from the last response (or the connect) and also ends idle
keep-alive connections, which must outlive a load balancer's idle timeout. So:
- `server.header_timeout`: `HeadDeadline` (a `web.RequestHandler`, aiohttp's public per-connection
  protocol) closes a connection whose request head is not complete this long after the connection
  opened, or after the first byte of a later request on it. The `head_received` middleware, the
  first to run once aiohttp has parsed a head, tells the connection; when the handler is done the
  next byte starts the clock again.
- `server.body_timeout`: the `read_body` middleware runs the handler under this deadline until
  the body has fully arrived (aiohttp's public `StreamReader.wait_eof`), answering 408 and closing
  the connection at once when it runs out.
- `server.keepalive_timeout`: aiohttp's own, for idle connections between requests.
`serve` runs the application like `web.run_app`, with these connections.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from gateway.config import Settings
from gateway.core.errors import RequestTimeout
from gateway.http.middleware import error_response

log = logging.getLogger("gateway.http")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
ACCESS_LOG_FORMAT = '%a "%r" %s %b %Tfs rid=%{X-Request-Id}o'


class HeadDeadline(web.RequestHandler):
    """One connection: closed when a request head takes longer than `header_timeout`."""

    def __init__(self, manager: web.Server, *, header_timeout: float, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self.header_timeout = header_timeout
        self._timer: asyncio.TimerHandle | None = None
        self._in_request = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm()  # a connection that sends nothing at all is held no longer than one that trickles

    def data_received(self, data: bytes) -> None:
        if data and not self._in_request and self._timer is None:
            self._arm()  # the first byte of a new request head
        super().data_received(data)

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def head_received(self) -> None:
        self._in_request = True
        self._disarm()

    def request_done(self) -> None:
        self._in_request = False

    def _arm(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(self.header_timeout, self._expired)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self) -> None:
        self._timer = None
        if not self._in_request:
            log.info("closed a connection that sent no complete request head within %.0fs", self.header_timeout)
            self.force_close()


@web.middleware
async def head_received(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Runs first, once aiohttp has a complete request head: stops the connection's head clock."""
    connection = request.protocol
    if isinstance(connection, HeadDeadline):
        connection.head_received()
    try:
        return await handler(request)
    finally:
        if isinstance(connection, HeadDeadline):
            connection.request_done()


def read_body(timeout: float) -> Middleware:
    """Bound the time a request's body may take to arrive to `timeout` seconds from its head.

    The body is still read by the handler, where it reads it (so a webhook checks its secret
    header before reading a byte), but the handler runs under a deadline that is lifted as soon as
    the last byte of the body is in. A body still arriving when it runs out cancels the handler
    (then still waiting for that body: nothing was done yet) and gets a 408, and the connection is
    closed at once."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.body_exists:
            return await handler(request)
        finished = False
        try:
            async with asyncio.timeout(timeout) as deadline:

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
            resp = error_response(RequestTimeout(f"the request body did not arrive within {timeout:g}s"))
            resp.force_close()
            await resp.prepare(request)  # sent now, then the connection closes: no lingering
            await resp.write_eof()  # read of a body that is still trickling in
            request.protocol.force_close()
            return resp

    return middleware


async def serve(app: web.Application, settings: Settings, announce: Callable[[], None]) -> None:
    """Serve `app` on server.host:port until SIGTERM or SIGINT, then shut down like
    `web.run_app`: stop accepting, on_shutdown, in-flight requests get shutdown_timeout, cleanup."""
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

    listener = await loop.create_server(connection, server.host, server.port, reuse_address=True)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        announce()
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        listener.close()
        await runner.cleanup()


def run(
    app: web.Application, settings: Settings, loop: asyncio.AbstractEventLoop, announce: Callable[[], None]
) -> None:
    """`serve` on `loop`, then cancel what is left and close the loop (as `web.run_app` does)."""
    try:
        loop.run_until_complete(serve(app, settings, announce))
    finally:
        left = asyncio.all_tasks(loop)
        for task in left:
            task.cancel()
        if left:
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


__all__ = ["ACCESS_LOG_FORMAT", "HeadDeadline", "head_received", "read_body", "run", "serve"]
