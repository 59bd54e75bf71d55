"""The PostgreSQL store: the shared use cases (gateway/store/shared/), each transaction on a
pooled connection (pool.py). What is PostgreSQL's own: the pool, claims, NOTIFY, liveness and
hand-over, its `Tx` (writes.py) and migrations.

Correctness across replicas comes from the database, never from a leader:
- `save_transition` is a compare-and-set on `version` (a concurrent UPDATE waits for the row
  lock, then re-checks the version and touches nothing);
- claims use `FOR UPDATE SKIP LOCKED` plus a lease, so each due row goes to one replica; a
  replica proved gone (liveness.py: its advisory lock is free and its heartbeat stale) has its
  claims released by another within about two seconds, and a stopping one hands its own back;
- after committing deliveries, jobs or deadlines, the store NOTIFYs (notify.py: why not inside
  the transaction) and other replicas' loops wake (`subscribe`); polling stays as the fallback.
A read of one statement sees one snapshot under READ COMMITTED; one of several, `read`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from gateway.core.clock import to_ts
from gateway.core.models import Approval, ClaimedJob, OutboxItem
from gateway.store.postgres.handover import Handover
from gateway.store.postgres.liveness import Liveness
from gateway.store.postgres.migrate import migrate
from gateway.store.postgres.notify import Listener, Notifier, Notify
from gateway.store.postgres.pool import Pool
from gateway.store.postgres.writes import PostgresTx
from gateway.store.rows import approval_from_row, job_from_row, outbox_from_row
from gateway.store.shared import SQLStore, Transaction
from gateway.store.shared.deliveries import launch_of
from gateway.store.shared.tx import started_events
from gateway.store.sql import Dialect, queries

__all__ = ["PostgresStore"]

T = TypeVar("T")


class PostgresStore(Handover, SQLStore):
    dialect: Dialect = "postgres"
    Q = queries("postgres")
    head_rows = True

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 10) -> None:
        self.url = url
        self._db = Pool(url, min_size=min_size, max_size=max_size)
        self._listener = Listener(url)
        self._liveness = Liveness(url)
        # a replica alone (its heartbeat saw no other) wakes nobody; any other process notifies
        self._notifier = Notifier(url, wanted=lambda: self._liveness.others != 0)

    # ---------------------------------------------------------------- the shared use cases' backend
    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        async with self._db.conn() as conn:  # one statement: one snapshot, no transaction needed
            return await PostgresTx(conn).fetch_all(sql, params)

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        async with self._db.conn() as conn:
            return await PostgresTx(conn).fetch_one(sql, params)

    async def transact(self, fn: Transaction[T]) -> T:
        async with self._db.tx() as conn:
            return await fn(PostgresTx(conn))

    async def read(self, fn: Transaction[T]) -> T:
        async with self._db.conn() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            return await fn(PostgresTx(conn))  # one snapshot (READ COMMITTED: one per statement)

    def committed(self, *, outbox: bool = False, jobs: bool = False, wake_at: float | None = None) -> None:
        self._notifier.committed(outbox=outbox, jobs=jobs, wake_at=wake_at)

    # ---------------------------------------------------------------- lifecycle
    async def open(self) -> None:
        await self._db.open()
        try:
            async with self._db.conn() as conn:
                await migrate(conn)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        await self._liveness.release()  # no-op unless still held: then the row stays, for the reapers
        await self._notifier.close()
        await self._listener.close()
        await self._db.close()

    async def subscribe(self, callback: Notify) -> None:
        """Call `callback(topic, payload)` when any replica commits work: topic `outbox`,
        `jobs`, or `wake` (payload: the epoch seconds of the new wake-up time)."""
        self._listener.callbacks.append(callback)
        await self._listener.revive()  # if LISTEN cannot start, polling still works

    # ---------------------------------------------------------------- claims
    async def _claim(self, sql: str, now: datetime, owner: str, lease: timedelta, limit: int) -> list[Any]:
        """Lease due rows with one `... FOR UPDATE SKIP LOCKED` statement ($1 now, $2 limit,
        $3 owner, $4 lease end): concurrent replicas skip each other's rows instead of waiting."""
        async with self._db.tx() as conn:
            return await PostgresTx(conn).fetch_all(sql, (to_ts(now), limit, owner, to_ts(now + lease)))

    async def claim_due(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[Approval]:
        rows = await self._claim(self.Q.claim_due, now, owner, lease, limit)
        return sorted((approval_from_row(r) for r in rows), key=lambda a: (a.wake_at, a.id))

    async def claim_outbox(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[OutboxItem]:
        await self._listener.revive()  # the outbox loop polls here: a good place to re-LISTEN
        rows = await self._claim(self.Q.claim_outbox, now, owner, lease, limit)
        return sorted((outbox_from_row(r) for r in rows), key=lambda i: i.id)

    async def claim_launches(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[ClaimedJob]:
        """Lease the due jobs, each with its `job_started` event (chained as every event is), and
        what each launches with, in the one transaction."""
        async with self._db.tx() as conn:
            tx = PostgresTx(conn)
            rows = await tx.fetch_all(self.Q.claim_jobs, (to_ts(now), limit, owner, to_ts(now + lease)))
            jobs = sorted((job_from_row(r) for r in rows), key=lambda j: j.id)
            await tx.insert_events(started_events(jobs, owner, now))
            return [await launch_of(self.Q, tx, job) for job in jobs]
