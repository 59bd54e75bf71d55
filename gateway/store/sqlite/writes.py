"""The shared use cases' `Tx` (gateway/store/shared/tx.py) on the SQLite writer's connection,
inside its transaction: nothing here suspends, so the writer runs a use case whole
(`run_at_once`).

A storm (10^5 deadlines at once) writes 10^5 events and jobs and thousands of deliveries in a
few transactions, so rows go in as multi-row INSERTs of the one-row statements in
gateway/store/sql/ (`multi_row`): each statement run has a fixed cost (the AUTOINCREMENT
counter is written once per statement).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from gateway.core.audit import Leaf
from gateway.store.shared import run_at_once
from gateway.store.shared.tx import EncodedEvent, Heads, Tx, encode_events
from gateway.store.sql import in_list, multi_row, queries

__all__ = ["ROWS_PER_INSERT", "SQLiteTx", "encode_events", "insert_events", "insert_rows"]

ROWS_PER_INSERT = 100  # rows per multi-row INSERT: at most 7 * 100 parameters, below SQLite's 999 of old
_CHUNK = 500  # ids per IN list, likewise


def insert_rows(conn: sqlite3.Connection, head: str, row: str, rows: Sequence[tuple[Any, ...]], tail: str = "") -> None:
    """`executemany(head + row + tail, rows)` with up to `ROWS_PER_INSERT` rows per statement.
    The rows go in in order, each checked as alone (a conflict skips only its own row)."""
    full = len(rows) - len(rows) % ROWS_PER_INSERT
    if full:
        chunks = [[v for r in rows[i : i + ROWS_PER_INSERT] for v in r] for i in range(0, full, ROWS_PER_INSERT)]
        conn.executemany(head + ", ".join([row] * ROWS_PER_INSERT) + tail, chunks)
    if full < len(rows):
        conn.executemany(head + row + tail, rows[full:])


class SQLiteTx(Tx):
    __slots__ = ("conn",)
    Q = queries("sqlite")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self.conn.execute(sql, params).rowcount

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.conn.execute(sql, params).fetchone()

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self.conn.execute(sql, params).fetchall()

    async def fetch_in(self, sql: str, ids: Sequence[str]) -> list[Any]:
        out = []
        for i in range(0, len(ids), _CHUNK):
            chunk = list(ids[i : i + _CHUNK])
            out += self.conn.execute(in_list(sql, len(chunk)), chunk).fetchall()
        return out

    async def written(self, sql: str, params: Sequence[Any], read_back: str, key: Sequence[Any]) -> Any:
        if self.conn.execute(sql, params).rowcount < 1:
            return None
        return self.conn.execute(read_back, key).fetchone()

    async def insert_many(self, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
        if rows:
            head, row, tail = multi_row(sql)
            insert_rows(self.conn, head, row, rows, tail)

    async def insert_queued(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Coalesced here, before the multi-row inserts: a sync is left out when its card has a
        pending, unclaimed sync in the table (one query for the run) or earlier in `rows`."""
        ids = list({r[0] for r in rows if r[2] == "sync"})
        pending = {(a, c) for a, c in await self.fetch_in(self.Q.pending_syncs, ids)}  # tuples, not sqlite3.Row
        kept = []
        for row in rows:
            if row[2] == "sync":
                if (row[0], row[1]) in pending:
                    continue
                pending.add((row[0], row[1]))
            kept.append(row)
        await self.insert_many(self.Q.insert_queued, kept)

    async def chain_heads(self, ids: list[str]) -> Heads:
        """An approval's head is its last event (migration 15): the one writer means no other
        transaction adds one in between, and nothing else is written to extend the chain."""
        if len(ids) == 1:  # a press, a delivery: one seek, no JSON to build and parse (0.6 of the batch form's time)
            row = self.conn.execute(self.Q.audit_head_of, ids).fetchone()
            return {} if row is None or row[0] is None else {ids[0]: (row[0], row[1])}
        rows = self.conn.execute(self.Q.audit_heads_in, (json.dumps(ids),))
        return {approval_id: (seq, digest) for approval_id, seq, digest in rows if seq is not None}

    async def write_events(self, rows: list[tuple[Any, ...]], heads: Heads) -> None:
        await self.insert_many(self.Q.insert_event, rows)

    async def seal_heads(self) -> list[Leaf]:
        """The heads that moved (each approval's last chained event after the watermark), then
        the watermark after them: one writer, no event comes in between."""
        leaves = [Leaf(a, s, h) for a, s, h in self.conn.execute(self.Q.unsealed_heads)]
        if leaves:
            self.conn.execute(self.Q.seal_heads)
        return leaves

    async def save_policy_rows(self, rows: Sequence[tuple[Any, ...]]) -> list[bool]:
        """One executemany first (the common case: every CAS wins); if any row did not match,
        undo it and run them one by one to learn which."""
        conn, sql = self.conn, self.Q.save_policy_transition
        conn.execute("SAVEPOINT cas_all")
        try:
            if conn.executemany(sql, rows).rowcount == len(rows):
                return [True] * len(rows)
            conn.execute("ROLLBACK TO cas_all")
            return [conn.execute(sql, row).rowcount == 1 for row in rows]
        finally:
            conn.execute("RELEASE cas_all")


def insert_events(conn: sqlite3.Connection, events: Sequence[EncodedEvent]) -> None:
    """`Tx.insert_events` from an `Op` of the writer's own (a plain function of the connection)."""
    run_at_once(lambda tx: tx.insert_events(events), SQLiteTx(conn))
