"""The audit calls (gateway/store/audit.py), written once over the named SQL for both backends.
Where a chain's head lives differs, and the Tx says it (`fetch_in`, `seal_heads`):

- PostgreSQL keeps each head in a row of its own (audit_heads, migration 13), locked by the
  writer that extends it; a checkpoint takes the checkpoints table's lock (one sealer at a time
  across replicas) and seals the heads no writer holds at that moment (SKIP LOCKED), so sealing
  never waits for a decision. Its event ids have holes (a rolled-back insert keeps its id).
- SQLite's head is its approval's last event (migration 15): one writer makes event ids commit
  order, a checkpoint seals the approvals with events after its watermark, and event ids have
  no holes (`audit_missing_event`)."""

from __future__ import annotations

from collections.abc import Sequence

from gateway.core.audit import ChainEvent, Checkpoint
from gateway.store.audit import (
    Chains,
    MakeCheckpoint,
    chain_event,
    checkpoint_from_row,
    checkpoint_values,
    group_leaves,
)
from gateway.store.shared.backend import Backend, Tx

__all__ = ["AuditSQL"]


class AuditSQL(Backend):
    head_rows: bool  # each chain's head in a row of its own (PostgreSQL), or its last event (SQLite)

    async def audit_approvals(self, since: float, until: float, *, full: bool) -> list[str]:
        params = (since, until, int(full)) if self.head_rows else (since, until)  # a full check adds the head rows
        return [r[0] for r in await self.fetch_all(self.Q.audit_approvals, params)]

    async def audit_events(self, approval_ids: Sequence[str]) -> list[ChainEvent]:
        Q = self.Q

        async def op(tx: Tx) -> list[ChainEvent]:
            return [chain_event(r) for r in await tx.fetch_in(Q.audit_events_in, approval_ids)]

        return await self.read(op)

    async def audit_chains(self, approval_ids: Sequence[str]) -> Chains:
        Q, head_rows = self.Q, self.head_rows

        async def op(tx: Tx) -> Chains:
            # One snapshot: a decision committed between two reads would show as a head (or a
            # row) ahead of its last event (or the reverse), a break that is not there.
            events = [chain_event(r) for r in await tx.fetch_in(Q.audit_events_in, approval_ids)]
            heads = await tx.fetch_in(Q.audit_heads_in, approval_ids) if head_rows else None
            rows = await tx.fetch_in(Q.audit_rows_in, approval_ids)
            return Chains.of(events, None if heads is None else {r[0]: (r[1], r[2]) for r in heads}, rows)

        return await self.read(op)

    async def audit_chain_start(self) -> int | None:
        row = await self.fetch_one(self.Q.audit_chain_start)
        return None if row is None else int(row[0])

    async def audit_missing_event(self) -> int | None:
        if self.head_rows:
            return None  # ids with holes: the head rows tell what a truncated chain lost
        row = await self.fetch_one(self.Q.missing_event)
        return None if row is None else row[0]

    async def audit_checkpoints(self, since: float, until: float) -> list[Checkpoint]:
        Q = self.Q

        async def op(tx: Tx) -> list[Checkpoint]:
            checkpoints = await tx.fetch_all(Q.checkpoints_between, (since, until))
            return group_leaves(checkpoints, await tx.fetch_all(Q.leaves_between, (since, until)))

        return await self.read(op)

    async def write_checkpoint(self, make: MakeCheckpoint, *, force: bool) -> Checkpoint | None:
        Q = self.Q

        async def op(tx: Tx) -> Checkpoint | None:
            leaves = await tx.seal_heads()
            if not leaves and not force:
                return None
            last = await tx.fetch_one(Q.last_checkpoint)
            checkpoint = make(checkpoint_from_row(last) if last else None, leaves)
            await tx.execute(Q.insert_checkpoint, checkpoint_values(checkpoint))
            await tx.insert_many(Q.insert_leaf, [(checkpoint.seq, lf.approval_id, lf.seq, lf.hash) for lf in leaves])
            return checkpoint

        return await self.transact(op)

    async def prune_raw(self, before: float, limit: int) -> int:
        return await self.changed_rows(self.Q.prune_raw, (before, limit))
