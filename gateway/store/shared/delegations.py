"""The delegations port, written once over the named SQL (backend.py); the row codec is here too."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gateway.core.clock import from_ts, to_ts
from gateway.core.delegation import Delegation, DelegationEvent
from gateway.store.rows import Row
from gateway.store.shared.backend import Backend
from gateway.store.shared.tx import Tx

__all__ = ["DelegationsSQL", "delegation_event_values"]


def _at(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def _from_row(row: Row) -> Delegation:
    return Delegation(
        id=row["id"],
        delegator=row["delegator"],
        delegate=row["delegate"],
        starts_at=_at(row["starts_at"]),
        ends_at=_at(row["ends_at"]),
        created_by=row["created_by"],
        created_at=_at(row["created_at"]),
        reason=row["reason"],
        revoked_at=from_ts(row["revoked_at"]),
        revoked_by=row["revoked_by"],
        uses=int(row["uses"]),
        last_used_at=from_ts(row["last_used_at"]),
    )


def delegation_event_values(e: DelegationEvent) -> tuple[Any, ...]:
    return (e.delegation_id, to_ts(e.at), e.kind, e.actor, e.approval_id)


class DelegationsSQL(Backend):
    async def create_delegation(self, d: Delegation) -> None:
        values = (
            d.id,
            d.delegator,
            d.delegate,
            to_ts(d.starts_at),
            to_ts(d.ends_at),
            d.reason,
            d.created_by,
            to_ts(d.created_at),
            to_ts(d.revoked_at),
            d.revoked_by,
        )
        created = DelegationEvent(d.id, d.created_at, "created", d.created_by)

        async def op(tx: Tx) -> None:
            await tx.execute(self.Q.insert_delegation, values)
            await tx.execute(self.Q.insert_delegation_event, delegation_event_values(created))

        await self.transact(op)

    async def get_delegation(self, delegation_id: str) -> Delegation | None:
        row = await self.fetch_one(self.Q.get_delegation, (delegation_id,))
        return _from_row(row) if row is not None else None

    async def list_delegations(self, now: datetime, *, live: bool = True, limit: int = 100) -> list[Delegation]:
        if live:
            rows = await self.fetch_all(self.Q.list_live_delegations, (to_ts(now), limit))
        else:
            rows = await self.fetch_all(self.Q.list_all_delegations, (limit,))
        return [_from_row(r) for r in rows]

    async def active_delegations(self, now: datetime, delegate: str | None = None) -> list[Delegation]:
        if delegate is not None:
            rows = await self.fetch_all(self.Q.active_delegations_to, (to_ts(now), delegate))
        else:
            rows = await self.fetch_all(self.Q.active_delegations, (to_ts(now),))
        return [_from_row(r) for r in rows]

    async def revoke_delegation(self, delegation_id: str, by: str, now: datetime) -> bool:
        revoked = DelegationEvent(delegation_id, now, "revoked", by)

        async def op(tx: Tx) -> bool:
            if await tx.execute(self.Q.revoke_delegation, (delegation_id, to_ts(now), by)) != 1:
                return False
            await tx.execute(self.Q.insert_delegation_event, delegation_event_values(revoked))
            return True

        return await self.transact(op)

    async def delegation_events(self, delegation_id: str) -> list[DelegationEvent]:
        rows = await self.fetch_all(self.Q.delegation_events, (delegation_id,))
        return [
            DelegationEvent(r["delegation_id"], _at(r["at"]), r["kind"], r["actor"], r["approval_id"]) for r in rows
        ]
