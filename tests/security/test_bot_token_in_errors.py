"""The bot token is in every Bot API URL: a transport error must not carry it into the outbox's
stored error, the audit chain or the logs.

aiohttp's ClientResponseError (a non-HTTP answer, say from a proxy) and InvalidURL put the whole
URL in their str(); here a socket answers `garbage` to the card's sendMessage.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.settings import Settings
from gateway.testing import FakeClock
from tests.conftest import AUTH, suspend_body

TOKEN = "123456:GARBAGE-token_secret"
CHAT = -1001234567890


@pytest.fixture
async def garbage_base_url() -> AsyncIterator[str]:
    """A server that reads the request and answers a line that is not HTTP."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(65536)
        writer.write(b"garbage\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/bot"
    finally:
        server.close()
        await server.wait_closed()


async def test_a_garbage_answer_stores_no_bot_token(
    aiohttp_client: Callable[..., Any],
    settings_factory: Callable[..., Settings],
    garbage_base_url: str,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    telegram = {
        "bot_token": TOKEN,
        "webhook_secret": "hook_secret-0123456789",
        "base_url": garbage_base_url,
        "approvers": [111],
        "chats": [CHAT],
    }
    settings = settings_factory(telegram=telegram)
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
