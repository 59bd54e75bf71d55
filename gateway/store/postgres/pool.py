"""The connection pool, and what a lost server means to a caller: `StoreUnavailable` (a 503),
never a crash. asyncpg's pool replaces a dropped connection on the next acquire, so a restarted
server is used again without a restart of the gateway (tests/store/test_pg_failures.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

from gateway.core.errors import StoreUnavailable

__all__ = ["CONNECT_ERRORS", "LOST_ERRORS", "Pool", "affected"]

CONNECT_ERRORS = (OSError, asyncpg.PostgresConnectionError, asyncpg.InterfaceError, TimeoutError)
# ...and what a call on a connection the server has just dropped raises (admin shutdown, restart).
LOST_ERRORS = (*CONNECT_ERRORS, asyncpg.OperatorInterventionError, asyncpg.InternalClientError)


def affected(status: str) -> int:
    """Rows touched, from a command tag such as 'UPDATE 1' or 'INSERT 0 1'."""
    count = status.rsplit(" ", 1)[-1]
    return int(count) if count.isdigit() else 0  # a DDL statement's tag ('CREATE TABLE') counts none


class _Connection(asyncpg.Connection):  # type: ignore[misc]  # asyncpg ships no types
    """A pooled connection released without asyncpg's reset query (`SELECT
    pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL`): on a pool connection we take no
    session-level lock, open no cursor outside a transaction, LISTEN on none and SET nothing
    (advisory locks and LISTEN live on connections of their own: liveness.py, notify.py), so the
    query would undo nothing, yet it cost a round trip and a transaction of its own at every
    release: about 30 of a cycle's 65 transactions. asyncpg still rolls back a transaction left
    open (its documented `get_reset_query` override)."""

    def get_reset_query(self) -> str:
        return ""


class Pool:
    """Pooled connections (READ COMMITTED): `conn()` for one statement, `tx()` for a use case."""

    def __init__(self, url: str, *, min_size: int, max_size: int) -> None:
        self.url = url
        self._min, self._max = min_size, max_size
        self._pool: asyncpg.Pool | None = None

    async def open(self) -> None:
        try:
            self._pool = await asyncpg.create_pool(
                self.url, min_size=self._min, max_size=self._max, connection_class=_Connection
            )
        except (*CONNECT_ERRORS, asyncpg.PostgresError) as exc:  # refused, bad password, no such database
            raise StoreUnavailable(f"cannot connect to PostgreSQL: {type(exc).__name__}") from None

    async def close(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

    @asynccontextmanager
    async def conn(self) -> AsyncIterator[asyncpg.Connection]:
        if self._pool is None:
            raise StoreUnavailable("the store is closed")
        pool = self._pool
        try:
            conn = await pool.acquire()
        except CONNECT_ERRORS as exc:
            raise StoreUnavailable(f"PostgreSQL is unavailable: {type(exc).__name__}") from None
        try:
            yield conn
        except LOST_ERRORS as exc:  # the server went away mid-call: 503, not a crash
            raise StoreUnavailable(f"PostgreSQL connection lost: {type(exc).__name__}") from None
        finally:
            await pool.release(conn)

    @asynccontextmanager
    async def tx(self) -> AsyncIterator[asyncpg.Connection]:
        async with self.conn() as conn, conn.transaction():
            yield conn
