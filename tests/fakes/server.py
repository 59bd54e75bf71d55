"""Start an aiohttp application on a free loopback port: the skeleton every local fake shares."""

from __future__ import annotations

from typing import Any

from aiohttp import web


async def serve_local(app: web.Application, **runner_args: Any) -> tuple[web.AppRunner, str]:
    """Run `app` on 127.0.0.1 at a port the OS picks; the runner (for `cleanup`) and its URL."""
    runner = web.AppRunner(app, **runner_args)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]  # the bound socket's name, through aiohttp's public API
    return runner, f"http://{host}:{port}"
