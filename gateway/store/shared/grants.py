"""The grants port, written once over the named SQL (backend.py); the row codec is here too."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from gateway.core.clock import from_ts, to_ts
from gateway.core.grants import Grant
from gateway.core.models import NewEvent
from gateway.store.rows import Row
from gateway.store.shared.backend import Backend

__all__ = ["GrantsSQL", "grant_from_row", "grant_values"]


def grant_values(g: Grant) -> tuple[Any, ...]:
    """The columns of insert_grant, in order."""
    return (
        g.id,
        g.namespace,
        g.step,
        g.run_id,
        json.dumps(list(g.fields)) if g.fields is not None else None,
        g.args_hash,
        g.duration,
        g.granted_by,
        g.person,
        g.approval_id,
        to_ts(g.created_at),
        to_ts(g.expires_at),
        to_ts(g.revoked_at),
        g.revoked_by,
        g.uses,
        to_ts(g.last_used_at),
    )


def grant_from_row(row: Row) -> Grant:
    created = datetime.fromtimestamp(row["created_at"], UTC)  # NOT NULL columns
    expires = datetime.fromtimestamp(row["expires_at"], UTC)
    return Grant(
        id=row["id"],
        namespace=row["namespace"],
        step=row["step"],
        run_id=row["run_id"],
        fields=tuple(json.loads(row["fields"])) if row["fields"] is not None else None,
        args_hash=row["args_hash"],
        duration=row["duration"],
        granted_by=row["granted_by"],
        approval_id=row["approval_id"],
        created_at=created,
        expires_at=expires,
        person=row["person"],
        revoked_at=from_ts(row["revoked_at"]),
        revoked_by=row["revoked_by"],
        uses=int(row["uses"]),
        last_used_at=from_ts(row["last_used_at"]),
    )


class GrantsSQL(Backend):
    async def create_grant(self, grant: Grant) -> None:
        await self.changed_rows(self.Q.insert_grant, grant_values(grant))

    async def get_grant(self, grant_id: str) -> Grant | None:
        row = await self.fetch_one(self.Q.get_grant, (grant_id,))
        return grant_from_row(row) if row is not None else None

    async def list_grants(self, now: datetime, *, live: bool = True, limit: int = 100) -> list[Grant]:
        if live:
            rows = await self.fetch_all(self.Q.list_live_grants, (to_ts(now), limit))
        else:
            rows = await self.fetch_all(self.Q.list_all_grants, (limit,))
        return [grant_from_row(r) for r in rows]

    async def live_grants(self, namespace: str, step: str, run_id: str, now: datetime) -> list[Grant]:
        rows = await self.fetch_all(self.Q.live_grants, (namespace, step, to_ts(now), run_id))
        return [grant_from_row(r) for r in rows]

    async def revoke_grant(self, grant_id: str, by: str, now: datetime, events: Sequence[NewEvent] = ()) -> bool:
        return await self.changed(self.Q.revoke_grant, (grant_id, to_ts(now), by), events)
