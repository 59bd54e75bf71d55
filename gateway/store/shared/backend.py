"""The narrow interface a backend gives the use cases (gateway/store/shared/): run one named
statement, fetch one row, fetch all, and run a function in a transaction (`Tx`). The use cases
are written once over it; sqlite/ and postgres/ implement it, and keep what really differs:
the engine or pool, claims, notify, liveness and migrations.

A transaction is an `async` function of a `Tx`. PostgreSQL awaits each statement on a pooled
connection. SQLite runs the whole function on its writer thread (one hand-off per transaction,
group commit): its `Tx` never suspends, so `run_at_once` drives the coroutine to its end in one
`send` (a plain language feature, nothing private of asyncio).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from gateway.core.models import NewEvent
from gateway.store.rows import Row
from gateway.store.shared.tx import Tx, encode_events
from gateway.store.sql import Dialect, Queries

__all__ = ["Backend", "Transaction", "Tx", "run_at_once"]

T = TypeVar("T")


Transaction = Callable[[Tx], Coroutine[Any, Any, T]]


class Backend:
    """What a backend store class provides to the shared use cases (mixins of gateway/store/shared/)."""

    dialect: Dialect
    Q: Queries  # the named statements in this dialect's style

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """One read: one statement sees one snapshot, no transaction of its own."""
        raise NotImplementedError

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        raise NotImplementedError

    async def transact(self, fn: Transaction[T]) -> T:
        """Run `fn` in one transaction (SQLite: on the writer, grouped with others)."""
        raise NotImplementedError

    async def read(self, fn: Transaction[T]) -> T:
        """Run `fn`, which only reads, in one snapshot (SQLite: on the reader, off the writer)."""
        return await self.transact(fn)

    async def changed_rows(self, sql: str, params: Sequence[Any]) -> int:
        """Run one statement in a transaction of its own; the rows it touched."""

        async def op(tx: Tx) -> int:
            return await tx.execute(sql, params)

        return await self.transact(op)

    async def changed(self, sql: str, params: Sequence[Any], events: Sequence[NewEvent] = ()) -> bool:
        """One-row UPDATE (or INSERT) in a transaction; the events only if it changed a row."""
        encoded = encode_events(events)

        async def op(tx: Tx) -> bool:
            if await tx.execute(sql, params) != 1:
                return False
            await tx.insert_events(encoded)
            return True

        return await self.transact(op)

    def committed(self, *, outbox: bool = False, jobs: bool = False, wake_at: float | None = None) -> None:
        """A transaction committed new work: wake other processes (PostgreSQL's NOTIFY). A
        no-op where one process owns the store."""
        return None


def run_at_once(fn: Transaction[T], tx: Tx) -> T:
    """Run `fn(tx)` to its end now, on this thread: for a `Tx` whose calls never suspend."""
    coro = fn(tx)
    try:
        coro.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    coro.close()
    raise RuntimeError("a synchronous transaction suspended: it awaited something other than its Tx")
