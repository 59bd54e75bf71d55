"""Apply the migrations (gateway/store/migrations/) to a PostgreSQL database."""

from __future__ import annotations

import asyncpg

from gateway.store.migrations import MIGRATIONS
from gateway.store.postgres.writes import PostgresTx
from gateway.store.shared.lifecycle import migrate as apply

__all__ = ["migrate"]

# One advisory lock key for "someone is migrating this database" (any 64-bit constant).
MIGRATION_LOCK = 0x6869746C_6D696772  # "hitlmigr"


async def migrate(conn: asyncpg.Connection) -> int:
    """Apply pending migrations in one transaction. The transaction-scoped advisory lock makes
    concurrent replicas queue here; the second one finds nothing left to do."""
    async with conn.transaction():
        tx = PostgresTx(conn)
        await tx.execute(tx.Q.lock_migrations, (MIGRATION_LOCK,))
        return await apply(tx, MIGRATIONS, lambda m: [m.postgres])  # a multi-statement script, no arguments
