"""Which replicas are alive, proved by PostgreSQL, so that a dead one's claims are taken over in
about two seconds instead of after `store.lease`.

Each claiming replica holds, on a connection of its own, a session-level advisory lock
(`LOCK_CLASS`, a random key) and a row in `replicas` whose `seen_at` it renews every `BEAT`
seconds. A killed process's connection closes with it, and PostgreSQL drops its lock at once; a
lost node's connection is dropped once TCP keepalives give up (`KEEPALIVES`: about 8 s). Any
replica that finds another's lock free AND its `seen_at` older than `STALE` deletes that row and
releases its claims (jobs, deliveries, wake-ups) in one transaction, then wakes every loop.

Why both proofs:
- the lock alone would take a live replica for dead while it reconnects (its connection was
  cut, PostgreSQL restarted);
- the heartbeat alone would take a live but stalled replica (CPU starved, paused) for dead, and
  run its running job a second time: a stalled process keeps its TCP connection, hence its lock.
After its own connection was re-made (a database restart drops every lock at once), a replica
waits `REJOIN_GRACE` before reaping anyone: the others are reconnecting too.

The heartbeat also counts the other replicas that renewed within `STALE`: with none, this one's
wake-up NOTIFYs would reach nobody, and the Notifier skips them (`others`). A replica that just
started is seen at the others' next beat (within `BEAT`); until then it finds their work by
polling, as it would a lost NOTIFY.

`store.lease` keeps its meaning: the longest a claim is held without renewal. It still frees the
claims of an owner that has no `replicas` row (a CLI command, a gateway of an older version in a
rolling upgrade) or that holds its lock but is hung.
"""

from __future__ import annotations

import logging
import secrets
import time
from typing import Any

import asyncpg

from gateway.store.sql import queries

__all__ = ["BEAT", "LOCK_CLASS", "STALE", "Liveness"]

log = logging.getLogger("gateway.store.postgres")
Q = queries("postgres")

LOCK_CLASS = 0x48495450  # "HITP": the first key of every replica lock (the migrations lock is a bigint one)
BEAT = 0.5  # seconds between heartbeats (and reaps)
STALE = 1.5  # a replica that has not renewed for this long, and whose lock is free, is gone
REJOIN_GRACE = 2 * STALE
# The server drops a connection whose peer vanished (no FIN: a lost node) after about
# idle + interval * count seconds; `tcp_user_timeout` bounds unacknowledged sends likewise.
KEEPALIVES = {
    "tcp_keepalives_idle": "5",
    "tcp_keepalives_interval": "1",
    "tcp_keepalives_count": "3",
    "tcp_user_timeout": "8000",
    "application_name": "hitl-gateway liveness",
}


class Liveness:
    """This process's proof of life, and the reaper of the replicas that are gone."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.owner: str | None = None
        self.key = 0
        self._conn: asyncpg.Connection | None = None
        self._reap_after = 0.0
        # other live replicas at the last heartbeat; None: not known (not claiming, or rejoining)
        self.others: int | None = None

    @property
    def held(self) -> bool:
        return self.owner is not None

    async def hold(self, owner: str) -> None:
        """Take a lock of our own and register `owner` (a first start reaps at once)."""
        self.owner = owner
        await self._connect()
        self._reap_after = 0.0

    async def _connect(self) -> None:
        assert self.owner is not None
        conn: asyncpg.Connection = await asyncpg.connect(self.url, server_settings=KEEPALIVES)
        try:
            while True:  # a random key; another replica drawing the same one is a 1 in 2^31 chance
                self.key = secrets.randbelow(2**31 - 1) + 1
                if await conn.fetchval(Q.lock_replica, LOCK_CLASS, self.key):
                    break
            await conn.execute(Q.register_replica, self.owner, self.key)
        except BaseException:
            await _close(conn)
            raise
        self._conn = conn

    async def beat(self) -> asyncpg.Connection | None:
        """Renew our heartbeat (reconnecting, re-locking and registering again if the
        connection was lost); return the connection when it may reap now, else None."""
        if self.owner is None:
            return None
        if self._conn is None or self._conn.is_closed():
            self._conn = None
            self.others = None
            await self._connect()
            self._reap_after = time.monotonic() + REJOIN_GRACE
            log.warning("liveness connection re-made; reaping resumes in %.0fs", REJOIN_GRACE)
            return None
        self.others = await self._conn.fetchval(Q.replica_heartbeat, self.owner, self.key, STALE)
        if self.others is None:
            await self._conn.execute(Q.register_replica, self.owner, self.key)  # we were reaped: rejoin
            log.warning("this replica was taken for gone (its claims were released); registered again")
        return self._conn if time.monotonic() >= self._reap_after else None

    async def reap(self, release: Any) -> list[str]:
        """Delete the rows of the replicas that are gone and, in the same transaction, call
        `release(conn, owner)` for each; return their owners."""
        conn = await self.beat()
        if conn is None:
            return []
        async with conn.transaction():
            gone = [r["owner"] for r in await conn.fetch(Q.gone_replicas, self.owner, STALE, LOCK_CLASS)]
            for owner in gone:
                await release(conn, owner)
        return gone

    async def release(self) -> None:
        """Stop proving this process alive: close the lock's connection (the lock goes with it).
        The `replicas` row is not deleted here: only the hand-back that left no claim deletes it
        (handover.py), in its own transaction; a row left behind is reaped by the others."""
        self.owner, self.others = None, None
        conn, self._conn = self._conn, None
        if conn is not None and not conn.is_closed():
            await _close(conn)


async def _close(conn: asyncpg.Connection) -> None:
    try:
        await conn.close(timeout=2)
    except Exception:  # a dead socket: drop it
        conn.terminate()
