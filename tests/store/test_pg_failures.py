"""PostgreSQL goes away under a running replica: calls fail with 503 store_unavailable (not a
crash), the pool reconnects, and the LISTEN connection comes back on the next outbox poll."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from urllib.parse import urlsplit

import asyncpg
import pytest

from gateway.core.errors import StoreUnavailable
from gateway.core.models import NewOutbox, OutboxKind
from gateway.store import open_store
from tests import pg
from tests.store.conftest import NOW, make_approval


async def _kill_connections(url: str) -> int:
    database = urlsplit(url).path.lstrip("/")
    admin = await asyncpg.connect(pg.server_url())
    try:
        return len(
            await admin.fetch(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
                database,
            )
        )
    finally:
        await admin.close()


async def test_store_recovers_after_its_connections_are_killed(pg_url: str) -> None:
    store, other = open_store(pg_url), open_store(pg_url)
    await store.open()
    await other.open()
    woken: asyncio.Queue[str] = asyncio.Queue()
    try:
        await store.subscribe(lambda topic, payload: woken.put_nowait(topic))
        assert await store.count_by_status() == {}
        assert await _kill_connections(pg_url) >= 3  # pools and the listener
        outcomes = []
        for _ in range(5):
            try:
                outcomes.append(await store.count_by_status())
            except StoreUnavailable as exc:
                assert exc.status == 503 and "PostgreSQL" in exc.message
                outcomes.append(None)
            if outcomes[-1] is not None:
                break
        assert outcomes[-1] == {}, outcomes
        assert await store.claim_outbox(NOW, "A", timedelta(seconds=5), 1) == []  # re-LISTENs
        a = make_approval()
        for _ in range(3):  # `other` may also hand out a dead pooled connection first
            try:
                await other.create_approval(a, [], [NewOutbox(a.id, "web", OutboxKind.POST)])
                break
            except StoreUnavailable:
                continue
        assert await asyncio.wait_for(woken.get(), 2) == "outbox"
    finally:
        await store.close()
        await other.close()


async def test_open_fails_clearly_when_the_server_is_unreachable(pg_database: str) -> None:
    store = open_store("postgresql://postgres@127.0.0.1:1/nothing")
    with pytest.raises(StoreUnavailable, match="cannot connect to PostgreSQL: ConnectionRefusedError"):
        await store.open()
    store = open_store(pg.with_database(pg_database, "hitl_no_such_database"))
    with pytest.raises(StoreUnavailable, match="cannot connect to PostgreSQL: InvalidCatalogNameError"):
        await store.open()
