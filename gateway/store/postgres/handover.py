"""The PostgreSQL store's part in failover (liveness.py): taking over the claims of replicas that
are gone, and handing back a stopping replica's own, each in one transaction. A stopping replica
unregisters only in the transaction that handed everything back: if it ever gave up its
registration with claims still held, no replica would reap them, and they would wait out
store.lease (a minute by default) instead of about two seconds."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from gateway.core.clock import to_ts
from gateway.store.postgres.liveness import Liveness
from gateway.store.postgres.notify import Notifier
from gateway.store.postgres.pool import Pool
from gateway.store.postgres.writes import PostgresTx
from gateway.store.shared.lifecycle import release
from gateway.store.sql import queries

__all__ = ["Handover"]

Q = queries("postgres")
log = logging.getLogger("gateway.store.postgres")


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

        async def release_gone(conn: Any, gone: str) -> None:
            nonlocal released
            released += await release(PostgresTx(conn), [gone], to_ts(now))

        if await self._liveness.reap(release_gone):
            self._notifier.committed(outbox=True, jobs=True, wake_at=to_ts(now))
        return released

    async def release_claims(self, owner: str, now: datetime) -> int:
        """Hand back what `owner` still holds (a stopping gateway) and wake the other replicas.
        Only when nothing is left does the same transaction unregister `owner`: a claim the
        hand-back skipped (a row another transaction held) or a hand-back that failed or was
        cut by the shutdown's bound leaves it registered, so the other replicas release its
        claims once this process is gone (its lock with it), never after store.lease alone."""
        try:
            async with self._db.tx() as conn:
                released = await release(PostgresTx(conn), [owner], to_ts(now), skip_held=True)
                left = bool(await conn.fetchval(Q.hand_back_left, owner))
                if not left and self._liveness.held:
                    await conn.execute(Q.unregister_replica, owner, self._liveness.key)
        finally:
            await self._liveness.release()  # the lock goes; the row stays unless deleted above
        if released:
            self._notifier.committed(outbox=True, jobs=True, wake_at=to_ts(now))
        if left:
            log.warning("some claims were held by another transaction; the other replicas take them over")
        return released
