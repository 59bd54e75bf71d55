"""Claims on SQLite: a SELECT then an UPDATE of what it found, inside the writer's transaction.

One process writes the file through one writer (engine.py), so nothing else can take the rows
between the two statements: no row locks to skip, unlike PostgreSQL's `FOR UPDATE SKIP LOCKED`
(sql/postgres.sql). Each function is an `Op` run on the writer's thread.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

from gateway.core.clock import to_ts
from gateway.core.models import Approval, OutboxItem, ResumeJob
from gateway.store.rows import approval_from_values, job_from_row, outbox_from_row
from gateway.store.shared.tx import started_events
from gateway.store.sql import in_list, queries
from gateway.store.sqlite.writes import insert_events

__all__ = ["claim_due", "claim_jobs", "claim_outbox"]

Q = queries("sqlite")


def claim_due(
    conn: sqlite3.Connection, now: float | None, owner: str, until: float | None, limit: int
) -> list[Approval]:
    # The rows are read before the lease is written (in the same transaction, which holds the
    # write lock): the lease columns are not part of an Approval, so nothing differs.
    # Plain tuples in APPROVAL_COLUMNS order: decoded by position, not by name.
    cur = conn.cursor()
    cur.row_factory = None
    rows = cur.execute(Q.claim_due, (now, now, limit)).fetchall()
    if not rows:
        return []
    ids = [r[0] for r in rows]
    conn.execute(in_list(Q.lease_due, len(ids)), (owner, until, *ids))
    return sorted(map(approval_from_values, rows), key=lambda a: (a.wake_at, a.id))


def claim_outbox(
    conn: sqlite3.Connection, now: float | None, owner: str, until: float | None, limit: int
) -> list[OutboxItem]:
    ids = [r[0] for r in conn.execute(Q.claim_outbox, (now, limit))]
    if not ids:
        return []
    conn.execute(in_list(Q.lease_outbox, len(ids)), (owner, until, *ids))
    return [outbox_from_row(r) for r in conn.execute(in_list(Q.claimed_outbox, len(ids)), ids)]


def claim_jobs(conn: sqlite3.Connection, now: datetime, owner: str, until: float | None, limit: int) -> list[ResumeJob]:
    """Lease the due jobs, each with its `job_started` event (chained as every event is), in
    the one transaction."""
    t = to_ts(now)
    ids = [r[0] for r in conn.execute(Q.claim_jobs, (t, limit))]
    if not ids:
        return []
    conn.execute(in_list(Q.lease_jobs, len(ids)), (owner, until, t, *ids))
    jobs = [job_from_row(r) for r in conn.execute(in_list(Q.claimed_jobs, len(ids)), ids)]
    insert_events(conn, started_events(jobs, owner, now))
    return jobs
