"""The audit calls both backends run alike (gateway/store/audit.py), written once over the
named SQL. Reading chains and sealing heads differ (one writer against row locks): each
backend's own audit.py."""

from __future__ import annotations

from gateway.core.audit import Checkpoint
from gateway.store.audit import group_leaves
from gateway.store.shared.backend import Backend, Tx

__all__ = ["AuditSQL"]


class AuditSQL(Backend):
    async def audit_chain_start(self) -> int | None:
        row = await self.fetch_one(self.Q.audit_chain_start)
        return None if row is None else int(row[0])

    async def audit_checkpoints(self, since: float, until: float) -> list[Checkpoint]:
        Q = self.Q

        async def op(tx: Tx) -> list[Checkpoint]:
            checkpoints = await tx.fetch_all(Q.checkpoints_between, (since, until))
            return group_leaves(checkpoints, await tx.fetch_all(Q.leaves_between, (since, until)))

        return await self.read(op)

    async def prune_raw(self, before: float, limit: int) -> int:
        return await self.changed_rows(self.Q.prune_raw, (before, limit))
