"""`hitl-gateway serve`: bind the listening socket first, then start the gateway on it."""

from __future__ import annotations

import asyncio
import errno
import gc
import os
import socket
from typing import Any

from gateway import __version__
from gateway.cli import address
from gateway.core.errors import GatewayError
from gateway.settings import Settings


class CannotListen(GatewayError):
    """The listening socket cannot be bound (the port is taken, or the address is not ours)."""

    code = "cannot_listen"
    status = 400  # the user's to fix: a command-line or config problem, exit code 2


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything else starts: a busy port must stop the start
    with one line, before the store is opened or a loop runs."""
    try:
        return socket.create_server((host, port), family=_family(host), backlog=1024)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            msg = f"server.port {port} is in use (on {host}); stop the other process or pick another port"
            raise CannotListen(msg) from None
        if exc.errno == errno.EACCES:
            raise CannotListen(f"server.port {port} needs privileges here; use a port above 1023") from None
        raise CannotListen(f"server.host {host!r} cannot be listened on: {exc.strerror}") from None
    except UnicodeError as exc:
        raise CannotListen(f"server.host {host!r} is not an address of this machine ({exc})") from None


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def serve(settings: Settings, *, dev_link: bool = False) -> int:
    from gateway.cli import web as web_cli
    from gateway.http import transport
    from gateway.http.app import create_app
    from gateway.telemetry import tracing

    sock = bind(settings.server.host, settings.server.port)
    stop_exporter = tracing.start_exporter(settings.telemetry, os.environ)  # [telemetry] or OTEL_*
    port = int(sock.getsockname()[1])
    if dev_link:
        web_cli.print_dev_link(address.at(settings, address.served_url(settings, port)))
    app = create_app(settings, exclusive=True)
    app.on_startup.append(freeze_heap)  # after the runtime's own start-up (cleanup_ctx runs first)
    recorded = address.record(settings, port, os.environ)  # where `web login-link` finds this gateway
    try:
        transport.run(
            app,
            settings,
            event_loop(),
            lambda: print(
                f"hitl-gateway {__version__} listening on http://{settings.server.host}:"
                f"{port} (store: {settings.store.url})",
                flush=True,
            ),
            sock,
        )
    finally:
        address.forget(recorded)
        if stop_exporter is not None:
            stop_exporter()  # the last spans, bounded (tracing.FLUSH_TIMEOUT)
    return 0


async def freeze_heap(app: Any) -> None:
    """Put everything alive once the gateway has started (modules, classes, templates, the
    runtime) out of the cyclic collector's reach: a full collection then walks only what requests
    allocate. Under suspend load one ran about once a second and took ~40 ms, stalling the event
    loop: most of a suspend's p99 at c=64 (with the freeze ~1.5 ms; docs/performance.md)."""
    gc.collect()
    gc.freeze()


def event_loop() -> asyncio.AbstractEventLoop:
    """The serving loop: uvloop where it is installed (a dependency on Linux and macOS), which
    takes about a tenth off the CPU of a suspend over HTTP (docs/performance.md); asyncio's own
    loop elsewhere."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()
