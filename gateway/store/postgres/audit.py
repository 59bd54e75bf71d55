"""The PostgreSQL store's audit calls (gateway/store/audit.py). A checkpoint takes the
checkpoints table's lock (one sealer at a time across replicas) and seals the heads no writer
holds at that moment (`seal_heads`, SKIP LOCKED): sealing never waits for a decision."""

from __future__ import annotations

from collections.abc import Sequence

from gateway.core.audit import ChainEvent, Checkpoint, Leaf
from gateway.store import audit as codec
from gateway.store.audit import MakeCheckpoint, chain_event, checkpoint_from_row, checkpoint_values
from gateway.store.postgres.pool import Pool
from gateway.store.sql import queries

__all__ = ["PostgresAudit"]

Q = queries("postgres")


class PostgresAudit:
    _db: Pool

    async def audit_approvals(self, since: float, until: float, *, full: bool) -> list[str]:
        return [r[0] for r in await self._db.fetch(Q.audit_approvals, since, until, int(full))]

    async def audit_events(self, approval_ids: Sequence[str]) -> list[ChainEvent]:
        return [chain_event(r) for r in await self._db.fetch(Q.audit_events_in, list(approval_ids))]

    async def audit_chains(self, approval_ids: Sequence[str]) -> codec.Chains:
        # One snapshot for the reads: under READ COMMITTED a decision committed between them
        # shows as a head (or a row) ahead of its last event (or the reverse), a break that is not there.
        ids = list(approval_ids)
        async with self._db.conn() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            events = [chain_event(r) for r in await conn.fetch(Q.audit_events_in, ids)]
            heads = await conn.fetch(Q.audit_heads_in, ids)
            rows = await conn.fetch(Q.audit_rows_in, ids)
        return codec.Chains.of(events, {r["approval_id"]: (r["seq"], r["hash"]) for r in heads}, rows)

    async def audit_missing_event(self) -> None:
        return None  # sequence ids have holes (a rolled-back insert keeps its id): the head rows tell

    async def write_checkpoint(self, make: MakeCheckpoint, *, force: bool) -> Checkpoint | None:
        async with self._db.tx() as conn:
            await conn.execute(Q.lock_checkpoints)
            rows = await conn.fetch(Q.seal_heads)
            if not rows and not force:
                return None
            leaves = sorted(Leaf(r["approval_id"], r["seq"], r["hash"]) for r in rows)
            last = await conn.fetchrow(Q.last_checkpoint)
            checkpoint = make(checkpoint_from_row(last) if last else None, leaves)
            await conn.execute(Q.insert_checkpoint, *checkpoint_values(checkpoint))
            if leaves:
                await conn.executemany(
                    Q.insert_leaf, [(checkpoint.seq, lf.approval_id, lf.seq, lf.hash) for lf in leaves]
                )
            return checkpoint
