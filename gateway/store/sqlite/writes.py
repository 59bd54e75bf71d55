"""Row writes several SQLite use cases share, run inside the writer's transaction.

A storm (10^5 deadlines at once) writes 10^5 events and jobs and thousands of deliveries in a
few transactions, so rows go in as multi-row INSERTs of the one-row statements in
gateway/store/sql/ (`multi_row`): each statement run has a fixed cost (the AUTOINCREMENT
counter is written once per statement).
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
from collections.abc import Sequence
from typing import Any, NamedTuple

from gateway.core.audit import GENESIS, event_tail, link_hash
from gateway.core.clock import to_ts
from gateway.core.models import DeliveryStatus, NewEvent, NewOutbox
from gateway.store.base import CardUpdate, NewJob
from gateway.store.rows import dumps
from gateway.store.sql import in_list, queries

__all__ = [
    "ROWS_PER_INSERT",
    "EncodedEvent",
    "SQLiteTx",
    "encode_events",
    "insert_events",
    "insert_jobs",
    "insert_outbox",
    "insert_rows",
    "multi_row",
    "update_all_or_each",
    "upsert_card",
]

Q = queries("sqlite")
ROWS_PER_INSERT = 100  # rows per multi-row INSERT: at most 7 * 100 parameters, below SQLite's 999 of old
_VALUES = re.compile(r"^(.*?\bVALUES\s*)(\(.*?\))(.*)$", re.S | re.I)
_NUMBERED = re.compile(r"\?(\d+)")


@functools.cache
def multi_row(sql: str) -> tuple[str, str, str]:
    """A one-row `INSERT ... VALUES (?1, ?2, ...) [tail]` as (head, row, tail) for `insert_rows`:
    the row's marks become plain `?`, so that `head + row, row, ... + tail` takes each row's
    values in turn. The row must number its marks 1, 2, ... once each, in order."""
    match = _VALUES.match(sql)
    if match is None:
        raise ValueError(f"not a one-row INSERT ... VALUES: {sql[:60]}")
    head, row, tail = match.groups()
    numbers = [int(n) for n in _NUMBERED.findall(row)]
    if numbers != list(range(1, len(numbers) + 1)):
        raise ValueError(f"a multi-row INSERT needs its marks once each, in order: {row}")
    return head, _NUMBERED.sub("?", row), tail


def insert_rows(conn: sqlite3.Connection, head: str, row: str, rows: Sequence[tuple[Any, ...]], tail: str = "") -> None:
    """`executemany(head + row + tail, rows)` with up to `ROWS_PER_INSERT` rows per statement.
    The rows go in in order, each checked as alone (a conflict skips only its own row)."""
    full = len(rows) - len(rows) % ROWS_PER_INSERT
    if full:
        chunks = [[v for r in rows[i : i + ROWS_PER_INSERT] for v in r] for i in range(0, full, ROWS_PER_INSERT)]
        conn.executemany(head + ", ".join([row] * ROWS_PER_INSERT) + tail, chunks)
    if full < len(rows):
        conn.executemany(head + row + tail, rows[full:])


def _insert_many(conn: sqlite3.Connection, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
    if rows:
        head, row, tail = multi_row(sql)
        insert_rows(conn, head, row, rows, tail)


class EncodedEvent(NamedTuple):
    """A `NewEvent` as its row and its chain text (`event_tail`), encoded on the caller's thread:
    the writer thread, which every use case waits for, then only reads the head and links it."""

    approval_id: str
    kind: str
    at: float
    actor: str | None
    channel: str | None
    data: str
    tail: str


def encode_events(events: Sequence[NewEvent]) -> list[EncodedEvent]:
    out = []
    for e in events:
        at, data = e.at.timestamp(), dumps(e.data)  # to_ts, never None here
        tail = event_tail(e.approval_id, e.kind, e.actor, at, e.channel, data)
        out.append(EncodedEvent(e.approval_id, e.kind, at, e.actor, e.channel, data, tail))
    return out


def insert_events(conn: sqlite3.Connection, events: Sequence[EncodedEvent], *, fresh: bool = False) -> None:
    """The events with their chain links (gateway/core/audit.py), in the writer's transaction.
    An approval's head is its last event (migration 15): the one writer means no other
    transaction adds one in between, and nothing else is written to extend the chain. `fresh`:
    the events of approvals created in this transaction, which have no event yet (nothing to read)."""
    if not events:
        return
    heads = {} if fresh else _heads(conn, list({e.approval_id: None for e in events}))
    rows = []
    for e in events:
        seq, prev = heads.get(e.approval_id, _START)
        digest = link_hash(prev, seq + 1, e.tail)
        heads[e.approval_id] = (seq + 1, digest)
        rows.append((e.approval_id, e.kind, e.at, e.actor, e.channel, e.data, seq + 1, digest))
    _insert_many(conn, Q.insert_event, rows)


_START = (0, GENESIS)  # an approval with no chained event yet (none, or only events from before migration 13)


def _heads(conn: sqlite3.Connection, ids: list[str]) -> dict[str, tuple[int, str]]:
    if len(ids) == 1:  # a press, a delivery: one seek, no JSON to build and parse (0.6 of the batch form's time)
        row = conn.execute(Q.audit_head_of, ids).fetchone()
        return {} if row is None or row[0] is None else {ids[0]: (row[0], row[1])}
    rows = conn.execute(Q.audit_heads_in, (json.dumps(ids),))
    return {approval_id: (seq, digest) for approval_id, seq, digest in rows if seq is not None}


def insert_jobs(conn: sqlite3.Connection, jobs: Sequence[NewJob], now: float) -> None:
    _insert_many(conn, Q.insert_job, [(job.approval_id, job.worker, now, now, now) for job in jobs])


def update_all_or_each(conn: sqlite3.Connection, sql: str, rows: Sequence[tuple[Any, ...]]) -> list[bool]:
    """Run a one-row compare-and-set UPDATE for each of `rows`; which ones matched.

    One executemany first (the common case: every CAS wins); if any row did not match, undo it
    and run them one by one to learn which."""
    conn.execute("SAVEPOINT cas_all")
    try:
        if conn.executemany(sql, rows).rowcount == len(rows):
            return [True] * len(rows)
        conn.execute("ROLLBACK TO cas_all")
        return [conn.execute(sql, row).rowcount == 1 for row in rows]
    finally:
        conn.execute("RELEASE cas_all")


def insert_outbox(conn: sqlite3.Connection, items: Sequence[NewOutbox], now: float) -> None:
    queued: list[tuple[Any, ...]] = []  # a run of queued rows goes in together (a storm: 500 syncs)
    for item in items:
        if item.ref is None:
            queued.append((item.approval_id, item.channel, item.kind.value, now, dumps(item.data), now, now))
            continue
        if queued:  # keep the rows in order
            _insert_queued(conn, queued)
            queued = []
        # posted in this commit: record it as the outbox would have
        conn.execute(Q.insert_posted, (item.approval_id, item.channel, now, dumps(item.data)))
        posted = CardUpdate(item.channel, item.ref, DeliveryStatus.DONE)
        upsert_card(conn, item.approval_id, posted, to_ts(item.posted_at) or now)
    if queued:
        _insert_queued(conn, queued)


def _insert_queued(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """Queue each row for delivery, in order, as multi-row inserts: a sync is coalesced away
    when its card already has a pending, unclaimed sync, in the table (one query for the run)
    or earlier in `rows`; what one statement per row did. Rows: (approval_id, channel, kind,
    now, data, now, now)."""
    pending: set[tuple[str, str]] = set()
    ids = list({r[0] for r in rows if r[2] == "sync"})
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        found = conn.execute(in_list(Q.pending_syncs, len(chunk)), chunk)
        pending.update((approval_id, channel) for approval_id, channel in found)  # tuples, not sqlite3.Row
    kept = []
    for row in rows:
        if row[2] == "sync":
            if (row[0], row[1]) in pending:
                continue
            pending.add((row[0], row[1]))
        kept.append(row)
    _insert_many(conn, Q.insert_queued, kept)


def upsert_card(conn: sqlite3.Connection, approval_id: str, card: CardUpdate, now: float | None) -> None:
    posted = now if card.status is DeliveryStatus.DONE else None
    conn.execute(Q.upsert_card, (approval_id, card.channel, card.ref, card.status.value, card.error, posted, now))


class SQLiteTx:
    """The shared use cases' `Tx` (gateway/store/shared/backend.py) on the writer's connection,
    inside its transaction: nothing here suspends, so the writer runs a use case whole
    (`run_at_once`)."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self.conn.execute(sql, params).rowcount

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.conn.execute(sql, params).fetchone()

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self.conn.execute(sql, params).fetchall()

    async def insert_events(self, events: Sequence[EncodedEvent], *, fresh: bool = False) -> None:
        insert_events(self.conn, events, fresh=fresh)

    async def insert_outbox(self, items: Sequence[NewOutbox], now: float) -> None:
        insert_outbox(self.conn, items, now)

    async def insert_jobs(self, jobs: Sequence[NewJob], now: float) -> None:
        insert_jobs(self.conn, jobs, now)

    async def upsert_card(self, approval_id: str, card: CardUpdate, now: float | None) -> None:
        upsert_card(self.conn, approval_id, card, now)

    async def save_policy_rows(self, rows: Sequence[tuple[Any, ...]]) -> list[bool]:
        return update_all_or_each(self.conn, Q.save_policy_transition, rows)
