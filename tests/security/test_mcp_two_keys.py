"""`mcp --http` and `mcp-gate --http`: the guard in front of MCP checked the last
`Authorization` header of a request, while the calls made for it (and the SDK) read the first.
A request carrying two keys is refused before MCP sees it, whichever they are."""

from __future__ import annotations

import json
from typing import Any

from gateway.mcp.serve import BearerRequired


async def _through(headers: list[tuple[bytes, bytes]]) -> tuple[int, Any, list[str]]:
    reached: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["user"].username)

    async def check(key: str) -> bool:
        return key in ("good-key-1", "good-key-2")

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers}
    await BearerRequired(app, check)(scope, receive, send)
    status = sent[0]["status"] if sent else 200
    body = json.loads(sent[1]["body"]) if len(sent) > 1 else None
    return status, body, reached


async def test_a_request_with_two_authorization_headers_is_refused_before_mcp() -> None:
    two = [(b"authorization", b"Bearer not-a-key"), (b"Authorization", b"Bearer good-key-1")]
    status, body, reached = await _through(two)
    assert (status, reached) == (400, [])  # before: let in, as the last key's user
    assert "one 'Authorization" in body["error"]["message"]
    status, _, reached = await _through([(b"authorization", b"Bearer good-key-2")])
    assert status == 200 and len(reached) == 1
