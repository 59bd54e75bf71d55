"""Fixtures: a real receiver on loopback, and a Runtime (SQLite and PostgreSQL) whose webhook is it.

The clock starts a little ahead of the wall clock: the outbox's rows are due at their insert
(wall) time, and the receiver checks `webhook-timestamp` against its own wall clock, with the
specification's tolerance of five minutes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.testing import FakeClock, make_settings
from tests.events.support import Receiver, receiving
from tests.web.conftest import WEB, sign_in


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime.now(UTC) + timedelta(seconds=20))


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with receiving(Receiver()) as r:
        yield r


@pytest.fixture
async def events_runtime(
    store_url: str, receiver: Receiver, clock: FakeClock, aiohttp_client: Callable[..., Any]
) -> AsyncIterator[Callable[..., Any]]:
    """Runtime(s) on `store_url` with one webhook (the receiver); `events=` and keywords
    override keys of `[events]` and of the webhook, `more=` adds sections. With `web=True`: (runtime, a client of the
    real app, signed in as an approver), the app starting the runtime."""
    made: list[Runtime] = []

    async def make(
        events: dict[str, Any] | None = None, *, web: bool = False, more: dict[str, Any] | None = None, **webhook: Any
    ) -> Any:
        hook = {"url": receiver.url, "secret": receiver.secret, "name": "siem"} | webhook
        sections = (more or {}) | {
            "events": {"webhooks": [hook], **(events or {})},
            "workers": {"agent": {"command": ["true"]}},
            "web": WEB,
            "policies": {
                "fast": {"timeout": "1m"},
                "esc": {"timeout": "1m", "on_timeout": "escalate", "escalate_to": ["web"], "escalation_timeout": "1m"},
            },
        }
        settings = make_settings(store_url, sections)
        rt = Runtime(settings, clock=clock, owner="test")
        if web:
            client = await aiohttp_client(create_app(settings, runtime=rt, background=False))
            await sign_in(client)
            return rt, client
        await rt.start(background=False)
        made.append(rt)
        return rt

    yield make
    for rt in made:
        await rt.stop()


@pytest.fixture
async def rt(events_runtime: Callable[..., Any]) -> AsyncIterator[Runtime]:
    runtime: Runtime = await events_runtime()
    yield runtime
