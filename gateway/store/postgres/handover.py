"""The PostgreSQL store's part in failover (liveness.py): taking over the claims of replicas that
are gone, and handing back a stopping replica's own, each in one transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gateway.core.clock import to_ts
from gateway.store.postgres.liveness import Liveness
from gateway.store.postgres.notify import Notifier
from gateway.store.postgres.pool import Pool, affected
from gateway.store.sql import queries

__all__ = ["Handover"]

Q = queries("postgres")


class Handover:
    """Mixed into PostgresStore, which sets these three."""

    _db: Pool
    _liveness: Liveness
    _notifier: Notifier

    async def take_over(self, owner: str, now: datetime, *, exclusive: bool = False) -> int:
        """Prove `owner` alive for as long as it claims (an advisory lock and a heartbeat), then
        release the claims of the replicas that are gone."""
        await self._liveness.hold(owner)
        return await self.reap(owner, now)

    async def reap(self, owner: str, now: datetime) -> int:
        """Renew `owner`'s heartbeat; release the claims of every replica proved gone."""
        released = 0

        async def release(conn: Any, gone: str) -> None:
            nonlocal released
            released += await _release(conn, gone, to_ts(now))

        if await self._liveness.reap(release):
            self._notifier.committed(outbox=True, jobs=True, wake_at=to_ts(now))
        return released

    async def release_claims(self, owner: str, now: datetime) -> int:
        """Hand back what `owner` still holds (a stopping gateway), wake the other replicas,
        and stop proving it alive."""
        async with self._db.tx() as conn:
            released = await _release(conn, owner, to_ts(now))
        self._notifier.committed(outbox=True, jobs=True, wake_at=to_ts(now))
        await self._liveness.release()
        return released


async def _release(conn: Any, owner: str, now: float | None) -> int:
    """Every claim `owner` holds, claimable again at once (in the caller's transaction)."""
    jobs = affected(await conn.execute(Q.release_jobs, owner, now))
    deliveries = affected(await conn.execute(Q.release_outbox, owner))
    wakes = affected(await conn.execute(Q.release_wakes, owner))
    return jobs + deliveries + wakes
