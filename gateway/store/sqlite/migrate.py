"""Apply the migrations (gateway/store/migrations/) to a SQLite file, on the writer's thread,
before its write loop starts: `BEGIN IMMEDIATE` makes a second process wait for the first."""

from __future__ import annotations

import sqlite3

from gateway.store.migrations import MIGRATIONS, Migration
from gateway.store.shared import run_at_once
from gateway.store.shared.lifecycle import migrate as apply
from gateway.store.sqlite.writes import SQLiteTx

__all__ = ["migrate"]


def migrate(conn: sqlite3.Connection) -> int:
    """Every version not applied yet, in order, in one transaction; returns the schema version."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = run_at_once(lambda tx: apply(tx, MIGRATIONS, _statements), SQLiteTx(conn))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return version


def _statements(m: Migration) -> list[str]:
    """Split a migration into statements, keeping trigger bodies (BEGIN ... END;) whole."""
    out, buf = [], ""
    for line in m.sqlite.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):  # it holds a `;` at least: never blank
            out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out
