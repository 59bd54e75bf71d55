"""Apply the migrations (gateway/store/migrations/) to a PostgreSQL database."""

from __future__ import annotations

import logging
import time

import asyncpg

from gateway.store.migrations import MIGRATIONS
from gateway.store.sql import queries

__all__ = ["migrate", "schema_version"]

log = logging.getLogger("gateway.store.postgres")
Q = queries("postgres")
# One advisory lock key for "someone is migrating this database" (any 64-bit constant).
MIGRATION_LOCK = 0x6869746C_6D696772  # "hitlmigr"


async def schema_version(conn: asyncpg.Connection) -> int:
    if not await conn.fetchval(Q.has_schema_migrations):
        return 0
    return int(await conn.fetchval(Q.schema_version))


async def migrate(conn: asyncpg.Connection) -> int:
    """Apply pending migrations in one transaction. The transaction-scoped advisory lock makes
    concurrent replicas queue here; the second one finds nothing left to do."""
    async with conn.transaction():
        await conn.execute(Q.lock_migrations, MIGRATION_LOCK)
        await conn.execute(Q.create_schema_migrations)
        # Every version not applied yet (a lower number can arrive after a higher one).
        applied = {r[0] for r in await conn.fetch(Q.applied_migrations)}
        for m in MIGRATIONS:
            if m.version not in applied:
                await conn.execute(m.postgres)  # no arguments: a multi-statement script is allowed
                await conn.execute(Q.record_migration, m.version, m.name, time.time())
                log.info("applied migration %s (%s)", m.version, m.name)
    return await schema_version(conn)
