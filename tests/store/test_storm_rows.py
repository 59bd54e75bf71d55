"""A storm's rows go in batches (SQLite: multi-row INSERTs of events, jobs and outbox rows, one
query for the pending syncs): same rows, same order, same per-row conflicts and coalescing as
one statement per row."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from gateway.core.models import NewEvent, NewOutbox, OutboxKind
from gateway.store import Store
from gateway.store.sqlite import SQLiteStore
from gateway.store.sqlite.writes import ROWS_PER_INSERT as _ROWS_PER_INSERT
from gateway.store.sqlite.writes import insert_rows as _insert_rows

NOW = datetime(2030, 1, 1, 12, tzinfo=UTC)


async def test_events_keep_their_order_across_multi_row_inserts(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "g.db"))
    await store.open()
    try:
        count = 2 * _ROWS_PER_INSERT + 7  # two full statements and a remainder
        await store.append_events([NewEvent("a1", f"k{i}", NOW, data={"i": i}) for i in range(count)])
        events = await store.list_events("a1")
    finally:
        await store.close()
    assert [e.kind for e in events] == [f"k{i}" for i in range(count)]
    assert [e.data for e in events] == [{"i": i} for i in range(count)]
    assert [e.id for e in events] == sorted({e.id for e in events})


def test_or_ignore_applies_to_each_row_of_a_multi_row_insert() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, k TEXT UNIQUE, v INTEGER)")
    keys = [f"k{i % (_ROWS_PER_INSERT + 3)}" for i in range(2 * _ROWS_PER_INSERT + 10)]  # repeats
    _insert_rows(conn, "INSERT OR IGNORE INTO t (k, v) VALUES ", "(?, ?)", [(k, i) for i, k in enumerate(keys)])
    rows = conn.execute("SELECT k, v FROM t ORDER BY id").fetchall()
    first = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    assert rows == sorted(first.items(), key=lambda kv: kv[1])
    _insert_rows(conn, "INSERT OR IGNORE INTO t (k, v) VALUES ", "(?, ?)", [])
    assert conn.execute("SELECT COUNT(*) FROM t").fetchone()[0] == len(first)


async def test_a_sync_is_coalesced_with_a_pending_one_until_it_is_claimed(store: Store) -> None:
    sync = OutboxKind.SYNC
    await store.enqueue_outbox([NewOutbox("a1", "web", sync), NewOutbox("a2", "web", sync)], NOW)
    # a1 and a2 have a pending sync in the table, a1 on "web" only; a3 has none yet
    batch = [NewOutbox(a, c, sync) for a, c in [("a1", "web"), ("a1", "slack:C1"), ("a3", "web"), ("a3", "web")]]
    await store.enqueue_outbox([*batch, NewOutbox("a2", "web", OutboxKind.REMIND, {"number": 1})], NOW)
    assert [(o.channel, o.kind) for o in await store.list_outbox("a1")] == [("web", sync), ("slack:C1", sync)]
    assert [(o.channel, o.kind) for o in await store.list_outbox("a2")] == [("web", sync), ("web", OutboxKind.REMIND)]
    assert [(o.channel, o.kind) for o in await store.list_outbox("a3")] == [("web", sync)]
    claimed = await store.claim_outbox(NOW + timedelta(seconds=1), "me", timedelta(seconds=60), 100)
    assert len(claimed) == 5
    await store.enqueue_outbox([NewOutbox("a1", "web", sync), NewOutbox("a1", "web", sync)], NOW)
    assert [o.kind for o in await store.list_outbox("a1")] == [sync, sync, sync]  # one new: the other is claimed
