"""A pooled PostgreSQL connection goes back to the pool without a reset query of its own: that
query (asyncpg's `SELECT pg_advisory_unlock_all()`...) undid nothing here and cost a round trip
and a transaction at every release, about half of a full cycle's transactions."""

from __future__ import annotations

from urllib.parse import urlsplit

import asyncpg

from gateway.store import open_store
from tests import pg
from tests.store.conftest import make_approval


async def _last_queries(url: str) -> list[str]:
    """What each other backend on the database ran last (pg_stat_activity keeps it when idle)."""
    admin = await asyncpg.connect(pg.server_url())
    try:
        rows = await admin.fetch(
            "SELECT query FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND state = 'idle'",
            urlsplit(url).path.lstrip("/"),
        )
    finally:
        await admin.close()
    return [r["query"] for r in rows]


async def test_a_released_connection_runs_no_reset_query(pg_url: str) -> None:
    store = open_store(pg_url)
    await store.open()
    try:
        approval = make_approval()
        await store.create_approval(approval, [], [])
        for _ in range(3):
            assert await store.get_approval(approval.id) is not None
        last = await _last_queries(pg_url)
    finally:
        await store.close()
    assert any("approvals" in q for q in last), last  # the store's own backends are seen
    assert not [q for q in last if "pg_advisory_unlock_all" in q]


async def test_a_transaction_left_open_is_still_rolled_back(pg_url: str) -> None:
    """asyncpg ends a transaction left open at release even without the reset query."""
    from gateway.store.postgres.pool import Pool

    db = Pool(pg_url, min_size=1, max_size=1)
    await db.open()
    try:
        async with db.conn() as conn:
            await conn.execute("BEGIN")
            await conn.execute("CREATE TEMP TABLE left_open (x int)")
        async with db.conn() as conn:
            assert not conn.is_in_transaction()
            assert await conn.fetchval("SELECT to_regclass('pg_temp.left_open')") is None
    finally:
        await db.close()
