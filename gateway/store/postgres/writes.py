"""The shared use cases' `Tx` (gateway/store/shared/tx.py) on a pooled PostgreSQL connection,
inside its transaction: one executemany per kind of row (one round trip for a storm's jobs),
events and their heads in one statement over arrays."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from gateway.core.audit import Leaf
from gateway.store.postgres.pool import affected
from gateway.store.shared.tx import Heads, Tx
from gateway.store.sql import queries

__all__ = ["PostgresTx"]


class PostgresTx(Tx):
    __slots__ = ("conn",)
    Q = queries("postgres")

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return affected(await self.conn.execute(sql, *params))

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return await self.conn.fetchrow(sql, *params)

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        rows: list[Any] = await self.conn.fetch(sql, *params)
        return rows

    async def fetch_in(self, sql: str, ids: Sequence[str]) -> list[Any]:
        return await self.fetch_all(sql, (list(ids),))

    async def written(self, sql: str, params: Sequence[Any], read_back: str, key: Sequence[Any]) -> Any:
        return await self.conn.fetchrow(sql, *params)  # its RETURNING

    async def insert_many(self, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
        if rows:
            await self.conn.executemany(sql, rows)

    async def insert_queued(self, rows: Sequence[tuple[Any, ...]]) -> None:
        await self.insert_many(self.Q.insert_queued, rows)  # coalesced in the statement

    async def chain_heads(self, ids: list[str]) -> Heads:
        """Locked, in id order, until this transaction commits: a writer of the same approval on
        another replica waits for it; other approvals are not held up. An approval's first
        head row comes with its first events, in the transaction that creates it: nobody else
        writes events for it before that commits (`fresh` skips this: one round trip)."""
        rows = await self.conn.fetch(self.Q.lock_audit_heads, sorted(ids))
        return {r["approval_id"]: (r["seq"], r["hash"]) for r in rows}

    async def write_events(self, rows: list[tuple[Any, ...]], heads: Heads) -> None:
        columns = [list(c) for c in zip(*rows, strict=True)]
        seqs, hashes = [s for s, _ in heads.values()], [h for _, h in heads.values()]
        await self.conn.execute(self.Q.insert_chained_events, *columns, list(heads), seqs, hashes)

    async def seal_heads(self) -> list[Leaf]:
        await self.conn.execute(self.Q.lock_checkpoints)
        return sorted(Leaf(r["approval_id"], r["seq"], r["hash"]) for r in await self.conn.fetch(self.Q.seal_heads))

    async def save_policy_rows(self, rows: Sequence[tuple[Any, ...]]) -> list[bool]:
        if len({r[-2] for r in rows}) == len(rows):  # one statement, one round trip
            columns = map(list, zip(*rows, strict=True))
            matched = {r[0] for r in await self.conn.fetch(self.Q.save_policy_transitions, *columns)}
            return [r[-2] in matched for r in rows]
        # the same approval twice: in order, so that only its first CAS can match
        return [await self.execute(self.Q.save_policy_transition, row) == 1 for row in rows]
