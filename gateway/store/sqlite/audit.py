"""The SQLite store's audit calls (gateway/store/audit.py): reads on the reader, the
checkpoint on the one writer (so nothing moves a head while it seals). One writer makes event
ids commit order: a head is its approval's last event, and a checkpoint seals the approvals
with events after its watermark (migration 15); event ids have no holes (missing_event)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from gateway.core.audit import ChainEvent, Checkpoint, Leaf
from gateway.store import audit as codec
from gateway.store.audit import MakeCheckpoint, chain_event, checkpoint_from_row, checkpoint_values
from gateway.store.sql import in_list, multi_row, queries
from gateway.store.sqlite.engine import Engine
from gateway.store.sqlite.writes import insert_rows

__all__ = ["SQLiteAudit"]

Q = queries("sqlite")
_CHUNK = 500


class SQLiteAudit:
    _engine: Engine

    async def audit_approvals(self, since: float, until: float, *, full: bool) -> list[str]:
        rows = await self._engine.read(lambda c: c.execute(Q.audit_approvals, (since, until)).fetchall())
        return [r[0] for r in rows]

    async def audit_events(self, approval_ids: Sequence[str]) -> list[ChainEvent]:
        return await self._engine.read(lambda c: _events(c, approval_ids))

    async def audit_chains(self, approval_ids: Sequence[str]) -> codec.Chains:
        def op(conn: sqlite3.Connection) -> codec.Chains:
            conn.execute("BEGIN")  # one snapshot for the events and the rows (autocommit otherwise)
            try:
                events, rows = _events(conn, approval_ids), []
                for i in range(0, len(approval_ids), _CHUNK):
                    chunk = list(approval_ids[i : i + _CHUNK])
                    rows += conn.execute(in_list(Q.audit_rows_in, len(chunk)), chunk).fetchall()
            finally:
                conn.execute("COMMIT")
            return codec.Chains.of(events, None, rows)  # no head rows: a head is its last event

        return await self._engine.read(op)

    async def audit_missing_event(self) -> int | None:
        row = await self._engine.read(lambda c: c.execute(Q.missing_event).fetchone())
        return None if row is None else row[0]

    async def write_checkpoint(self, make: MakeCheckpoint, *, force: bool) -> Checkpoint | None:
        def op(conn: sqlite3.Connection) -> Checkpoint | None:
            leaves = [Leaf(a, s, h) for a, s, h in conn.execute(Q.unsealed_heads)]
            if not leaves and not force:
                return None
            last = conn.execute(Q.last_checkpoint).fetchone()
            checkpoint = make(checkpoint_from_row(last) if last else None, leaves)
            conn.execute(Q.seal_heads)
            conn.execute(Q.insert_checkpoint, checkpoint_values(checkpoint))
            if leaves:
                head, row, tail = multi_row(Q.insert_leaf)
                insert_rows(conn, head, row, [(checkpoint.seq, lf.approval_id, lf.seq, lf.hash) for lf in leaves], tail)
            return checkpoint

        return await self._engine.write(op)


def _events(conn: sqlite3.Connection, approval_ids: Sequence[str]) -> list[ChainEvent]:
    out: list[ChainEvent] = []
    for i in range(0, len(approval_ids), _CHUNK):
        chunk = list(approval_ids[i : i + _CHUNK])
        out.extend(chain_event(r) for r in conn.execute(in_list(Q.audit_events_in, len(chunk)), chunk))
    return out
