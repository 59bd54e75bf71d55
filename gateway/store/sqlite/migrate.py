"""Apply the migrations (gateway/store/migrations/) to a SQLite file, on the writer's thread."""

from __future__ import annotations

import sqlite3
import time

from gateway.store.migrations import MIGRATIONS
from gateway.store.sql import queries

__all__ = ["migrate", "schema_version"]

Q = queries("sqlite")


def schema_version(conn: sqlite3.Connection) -> int:
    if conn.execute(Q.has_schema_migrations).fetchone() is None:
        return 0
    return int(conn.execute(Q.schema_version).fetchone()[0])


def migrate(conn: sqlite3.Connection) -> int:
    """Every version not applied yet, in order, in one transaction; returns the schema version."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(Q.create_schema_migrations)
        # not just those above the highest: branches number their migrations ahead of time, so
        # a lower one can arrive after a higher one
        applied = {r[0] for r in conn.execute(Q.applied_migrations)}
        for m in MIGRATIONS:
            if m.version not in applied:
                for statement in _split(m.sqlite):
                    conn.execute(statement)
                conn.execute(Q.record_migration, (m.version, m.name, time.time()))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return schema_version(conn)


def _split(script: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies (BEGIN ... END;) whole."""
    out, buf = [], ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out
