"""SQLite writes a storm's events and jobs with multi-row INSERTs: same rows, same order, same
per-row conflict handling as one INSERT per row."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from gateway.models import NewEvent
from gateway.store.sqlite import _ROWS_PER_INSERT, SQLiteStore, _insert_rows

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
