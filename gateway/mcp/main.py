"""Start the MCP server or the gate on a transport (imports the MCP SDK: the `mcp` extra)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from gateway.core.errors import GatewayError
from gateway.mcp.client import Gateway
from gateway.mcp.gate import GateConfig, Gatekeeper, build_gate, upstream_label
from gateway.mcp.serve import MCP_PATH, run_http, run_stdio
from gateway.mcp.server import Defaults, build_server


class UpstreamUnavailable(GatewayError):
    """The wrapped server could not be started or did not answer `initialize`: one line for
    the person who configured it, not a traceback."""

    code = "upstream_unavailable"
    status = 400  # theirs to fix (the command, the URL): exit code 2


def _root_cause(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (the MCP SDK's task groups wrap what went wrong)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


async def run_server(defaults: Defaults, base_url: str, key: str | None, listen: tuple[str, int] | None) -> int:
    gateway = Gateway(base_url)
    try:
        if listen is None:
            await build_server(gateway, key, defaults).run_stdio_async()
        else:  # each HTTP client brings its own key: the process's is never lent to them
            host, port = listen
            mcp = build_server(gateway, None, defaults)
            await run_http(
                mcp.streamable_http_app(streamable_http_path=MCP_PATH, host=host), host, port, gateway.key_is_valid
            )
    finally:
        await gateway.close()
    return 0


async def run_gate(spec: dict[str, Any], base_url: str, key: str | None, listen: tuple[str, int] | None) -> int:
    config = GateConfig(
        upstream=upstream_label(spec["upstream"]),
        require_approval=tuple(spec["require_approval"]),
        secret=spec["secret"],
        channels=tuple(spec["channels"]),
        approvers=tuple(spec["approvers"]),
        policy=spec["policy"],
        wait_seconds=spec["wait_seconds"],
    )
    gateway = Gateway(base_url)
    started = False
    try:
        async with upstream_session(spec["upstream"], spec["headers"], spec["env"]) as upstream:
            started = True
            keeper = Gatekeeper(config, upstream, gateway, key if listen is None else None)
            await keeper.warn_unmatched()
            server = build_gate(keeper)
            if listen is None:
                await run_stdio(server)
            else:
                host, port = listen
                app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
                await run_http(app, host, port, gateway.key_is_valid)
    except Exception as exc:  # an ExceptionGroup too: the SDK's task groups wrap the cause
        if started:
            raise
        cause = _root_cause(exc)
        raise UpstreamUnavailable(
            f"the upstream {config.upstream} did not start or did not answer initialize: "
            f"{type(cause).__name__}: {cause} (its own messages, if any, are above)"
        ) from exc
    finally:
        await gateway.close()
    return 0


@contextlib.asynccontextmanager
async def upstream_session(
    upstream: list[str], headers: dict[str, str], env: dict[str, str]
) -> AsyncIterator[ClientSession]:
    """One client session to the wrapped server for the gate's lifetime: stdio or streamable HTTP."""
    async with contextlib.AsyncExitStack() as stack:
        if upstream[0].startswith(("http://", "https://")):
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0))
            )
            read, write = await stack.enter_async_context(streamable_http_client(upstream[0], http_client=http))
        else:
            params = StdioServerParameters(command=upstream[0], args=upstream[1:], env=env)
            read, write = await stack.enter_async_context(stdio_client(params))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        yield session


__all__ = ["Defaults", "UpstreamUnavailable", "run_gate", "run_server", "upstream_session"]
