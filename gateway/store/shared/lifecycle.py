"""Two steps of a store's life written once over a `Tx`: applying the migrations
(gateway/store/migrations/), and handing claims back. What differs stays with each backend:
the lock that makes concurrent starts queue and how a script splits into statements
(sqlite/migrate.py, postgres/migrate.py), and how a process is proved gone (SQLite's file
locks, sqlite/serve_lock.py; PostgreSQL's liveness.py and handover.py)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from gateway.store.migrations import Migration
from gateway.store.shared.tx import Tx

__all__ = ["migrate", "release", "schema_version"]

log = logging.getLogger("gateway.store")


async def schema_version(tx: Tx) -> int:
    if await tx.fetch_one(tx.Q.has_schema_migrations) is None:
        return 0
    row = await tx.fetch_one(tx.Q.schema_version)
    return int(row[0]) if row else 0


async def migrate(tx: Tx, migrations: Sequence[Migration], statements: Callable[[Migration], list[str]]) -> int:
    """Every version not applied yet, in order, in `tx`; returns the schema version."""
    Q = tx.Q
    await tx.execute(Q.create_schema_migrations)
    # not just those above the highest: branches number their migrations ahead of time, so a
    # lower one can arrive after a higher one
    applied = {r[0] for r in await tx.fetch_all(Q.applied_migrations)}
    for m in migrations:
        if m.version not in applied:
            for statement in statements(m):
                await tx.execute(statement)
            await tx.execute(Q.record_migration, (m.version, m.name, time.time()))
            log.info("applied migration %s (%s)", m.version, m.name)
    return await schema_version(tx)


async def release(tx: Tx, owners: Sequence[str], now: float | None, *, skip_held: bool = False) -> int:
    """Every claim of `owners` (jobs, deliveries, wake-ups), claimable again at once; how many.
    `skip_held`: leave the rows another transaction holds (PostgreSQL's hand-back at exit,
    which never waits on a lock)."""
    Q = tx.Q
    if skip_held:
        jobs, outbox, wakes = Q.hand_back_jobs, Q.hand_back_outbox, Q.hand_back_wakes
    else:
        jobs, outbox, wakes = Q.release_jobs, Q.release_outbox, Q.release_wakes
    released = 0
    for owner in owners:
        released += await tx.execute(jobs, (owner, now))
        released += await tx.execute(outbox, (owner,))
        released += await tx.execute(wakes, (owner,))
    return released
