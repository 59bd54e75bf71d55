"""Transports for the MCP server and the gate: stdio, or streamable HTTP behind a bearer check.

Under stdio the process is one client, and it calls the gateway with `HITL_API_KEY`. Under
streamable HTTP every request must carry `Authorization: Bearer <key>`: that key is forwarded to
the gateway, which decides what it may do, so each client is its own principal and the MCP
process never lends its own key to anyone.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import uvicorn
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from starlette.types import ASGIApp, Receive, Scope, Send

MCP_PATH = "/mcp"


class MissingKey(Exception):
    """An HTTP request without a bearer key (the ASGI guard lets none through; kept as a check)."""


def bearer(headers: Any) -> str | None:
    """The key of an `Authorization: Bearer <key>` header, or None."""
    scheme, _, credential = str(headers.get("authorization") or "").partition(" ")
    return credential.strip() or None if scheme.lower() == "bearer" else None


def caller_key(request: Any, default: str | None) -> str | None:
    """The key to call the gateway with: the HTTP client's own, else (stdio) the process's."""
    if request is None:
        return default
    key = bearer(request.headers)
    if key is None:
        raise MissingKey("send 'Authorization: Bearer <agent key>': the gateway decides what that key may do")
    return key


class BearerRequired:
    """ASGI guard: an HTTP request whose bearer key the gateway does not take gets 401 before it
    reaches MCP. The gate needs this: its pass-through calls and tool lists never reach the
    gateway, so without it any string would do as a key. A key the gateway took is trusted for
    `ttl` seconds (a revoked key stops working within that), a refused one never. An MCP session
    belongs to the key that opened it (`key_user`)."""

    def __init__(self, app: ASGIApp, check: Callable[[str], Awaitable[bool]], ttl: float = 60.0) -> None:
        self.app, self.check, self.ttl = app, check, ttl
        self._valid: dict[str, float] = {}  # sha256(key) -> until (time.monotonic)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan: the session manager starts and stops through it
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if sum(k.lower() == b"authorization" for k, _ in scope["headers"]) > 1:
            # one key per request: this guard reads the last, the calls made for it the first
            await _refuse(send, 400, "bad_request", "send one 'Authorization: Bearer <agent key>' header, not several")
            return
        key = bearer(headers)
        if key is None:
            await _refuse(send, 401, "unauthorized", "missing 'Authorization: Bearer <agent key>'")
            return
        try:
            valid = await self._known(key)
        except Exception as exc:  # the gateway cannot say: neither let in nor call the key wrong
            await _refuse(send, 503, "gateway_unavailable", str(exc))
            return
        if not valid:
            await _refuse(send, 401, "unauthorized", "the gateway does not take this key")
            return
        await self.app({**scope, "user": key_user(key)}, receive, send)

    async def _known(self, key: str) -> bool:
        digest, now = _digest(key), time.monotonic()
        if self._valid.get(digest, 0.0) > now:
            return True
        if len(self._valid) > 10_000:  # bounded: forget expired keys
            self._valid = {d: t for d, t in self._valid.items() if t > now}
        if not await self.check(key):
            return False
        self._valid[digest] = now + self.ttl
        return True


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_user(key: str) -> AuthenticatedUser:
    """The request's user, as the SDK's own bearer middleware sets it: the streamable HTTP
    session manager binds a session to the user that opened it, and answers any other user's
    request on it (a DELETE too) `404 Session not found`, as if it did not exist. Named by a
    hash of the key: the key itself goes nowhere it could be logged."""
    name = "key-" + _digest(key)[:32]
    return AuthenticatedUser(AccessToken(token=name, client_id=name, scopes=[]))


async def _refuse(send: Send, status: int, code: str, message: str) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="hitl-gateway"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def run_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def run_http(app: ASGIApp, host: str, port: int, check: Callable[[str], Awaitable[bool]]) -> None:
    config = uvicorn.Config(BearerRequired(app, check), host=host, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()


__all__ = ["MCP_PATH", "BearerRequired", "MissingKey", "bearer", "caller_key", "key_user", "run_http", "run_stdio"]
