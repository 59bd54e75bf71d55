"""The shared use cases' `Tx` (gateway/store/shared/backend.py) on a pooled PostgreSQL
connection, inside its transaction, with the row writes several use cases share (one
executemany per kind of row: one round trip for a storm's events or jobs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from gateway.core.audit import GENESIS, event_hash
from gateway.core.clock import to_ts
from gateway.core.models import DeliveryStatus, NewEvent, NewOutbox
from gateway.store.base import CardUpdate, NewJob
from gateway.store.postgres.pool import affected
from gateway.store.rows import dumps
from gateway.store.sql import queries

__all__ = ["PostgresTx"]

Q = queries("postgres")


class PostgresTx:
    __slots__ = ("conn",)

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return affected(await self.conn.execute(sql, *params))

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return await self.conn.fetchrow(sql, *params)

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        rows: list[Any] = await self.conn.fetch(sql, *params)
        return rows

    async def insert_events(self, events: Sequence[NewEvent], *, fresh: bool = False) -> None:
        """The events with their chain links (gateway/core/audit.py): lock the approvals' heads
        (a writer of the same approval on another replica waits for this commit; other
        approvals are not held up), extend them, write events and heads in one statement. An
        approval's first head row is created by its first events, in the transaction that
        creates the approval: nobody else can write events for it before that commits (so
        `fresh`, the events of approvals created in this transaction, skips the lock: one
        round trip)."""
        if not events:
            return
        heads: dict[str, tuple[int, str]] = {}
        if not fresh:
            ids = sorted({e.approval_id for e in events})
            heads = {r["approval_id"]: (r["seq"], r["hash"]) for r in await self.conn.fetch(Q.lock_audit_heads, ids)}
        cols: tuple[list[object], ...] = ([], [], [], [], [], [], [], [])
        for e in events:
            at, data = e.at.timestamp(), dumps(e.data)  # to_ts, never None here
            seq, prev = heads.get(e.approval_id, (0, GENESIS))
            digest = event_hash(prev, seq + 1, e.approval_id, e.kind, e.actor, at, e.channel, data)
            heads[e.approval_id] = (seq + 1, digest)
            for col, value in zip(
                cols, (e.approval_id, e.kind, at, e.actor, e.channel, data, seq + 1, digest), strict=True
            ):
                col.append(value)
        seqs, hashes = [s for s, _ in heads.values()], [h for _, h in heads.values()]
        await self.conn.execute(Q.insert_chained_events, *cols, list(heads), seqs, hashes)

    async def insert_outbox(self, items: Sequence[NewOutbox], now: float) -> None:
        queued = [(i.approval_id, i.channel, i.kind.value, now, dumps(i.data)) for i in items if i.ref is None]
        if queued:
            await self.conn.executemany(Q.insert_queued, queued)
        for item in items:
            if item.ref is not None:  # posted in this commit: record it as the outbox would have
                await self.conn.execute(Q.insert_posted, item.approval_id, item.channel, now, dumps(item.data))
                posted = CardUpdate(item.channel, item.ref, DeliveryStatus.DONE)
                await self.upsert_card(item.approval_id, posted, to_ts(item.posted_at) or now)

    async def insert_jobs(self, jobs: Sequence[NewJob], now: float) -> None:
        """Resume jobs of decided approvals (one per approval: a second is ignored)."""
        if jobs:
            await self.conn.executemany(Q.insert_job, [(job.approval_id, job.worker, now, now, now) for job in jobs])

    async def upsert_card(self, approval_id: str, card: CardUpdate, now: float | None) -> None:
        posted = now if card.status is DeliveryStatus.DONE else None
        await self.conn.execute(
            Q.upsert_card, approval_id, card.channel, card.ref, card.status.value, card.error, posted, now
        )

    async def save_policy_rows(self, rows: Sequence[tuple[Any, ...]]) -> list[bool]:
        if len({r[-2] for r in rows}) == len(rows):  # one statement, one round trip
            columns = map(list, zip(*rows, strict=True))
            matched = {r[0] for r in await self.conn.fetch(Q.save_policy_transitions, *columns)}
            return [r[-2] in matched for r in rows]
        # the same approval twice: in order, so that only its first CAS can match
        return [await self.execute(Q.save_policy_transition, row) == 1 for row in rows]
