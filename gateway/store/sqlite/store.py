"""The SQLite store: the shared use cases (gateway/store/shared/) on the writer engine
(engine.py), each transaction run whole on the writer's thread; reads on the reader. What is
SQLite's own: the engine, the file locks that prove a claimer gone (serve_lock.py), claims
(claims.py), its `Tx` (writes.py) and migrations."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from gateway.core.clock import to_ts
from gateway.core.models import Approval, ClaimedJob, OutboxItem
from gateway.store.shared import SQLStore, Transaction, run_at_once
from gateway.store.shared.deliveries import launch_of
from gateway.store.shared.lifecycle import release
from gateway.store.sql import Dialect, queries
from gateway.store.sqlite import claims
from gateway.store.sqlite.engine import Engine
from gateway.store.sqlite.migrate import migrate
from gateway.store.sqlite.serve_lock import FileLock, claimer_gone, claimer_lock, serve_lock
from gateway.store.sqlite.writes import SQLiteTx

__all__ = ["SQLiteStore"]

T = TypeVar("T")


class SQLiteStore(SQLStore):
    dialect: Dialect = "sqlite"
    Q = queries("sqlite")
    head_rows = False

    def __init__(self, path: str) -> None:
        self.path = path
        self._engine = Engine(path)
        self._serve_lock: FileLock | None = None  # held by a `serve` (serve_lock.py)
        self._claimer: FileLock | None = None  # held by any process that claims work

    # ---------------------------------------------------------------- the shared use cases' backend
    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        return await self._engine.read(lambda c: c.execute(sql, params).fetchall())

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return await self._engine.read(lambda c: c.execute(sql, params).fetchone())

    async def read(self, fn: Transaction[T]) -> T:
        return await self._engine.read(functools.partial(_snapshot, fn))

    async def transact(self, fn: Transaction[T]) -> T:
        return await self._engine.write(lambda conn: run_at_once(fn, SQLiteTx(conn)))

    # ---------------------------------------------------------------- lifecycle
    async def open(self) -> None:
        await self._engine.open(migrate)

    async def close(self) -> None:
        try:
            await self._engine.close()
        finally:
            self._let_go()

    def _let_go(self) -> None:
        if self._claimer is not None:
            self._claimer.release(remove=True)
            self._claimer = None
        if self._serve_lock is not None:
            self._serve_lock.release()
            self._serve_lock = None

    async def take_over(self, owner: str, now: datetime, *, exclusive: bool = False) -> int:
        """Hold `owner`'s claimer lock (and with `exclusive`, a `serve`, the file's serve lock:
        StoreInUse if another serve lives), then release the claims of the owners proved gone
        (serve_lock.py)."""
        if self.path == ":memory:":
            return 0
        if exclusive and self._serve_lock is None:
            self._serve_lock = serve_lock(self.path)
        if self._claimer is None:
            self._claimer = claimer_lock(self.path, owner)
        serving = self._serve_lock is not None
        held = [r[0] for r in await self.fetch_all(self.Q.claim_owners)]
        gone = [o for o in held if o != owner and claimer_gone(self.path, o, serving=serving)]
        if not gone:
            return 0
        t = to_ts(now)
        return await self.transact(lambda tx: release(tx, gone, t))

    async def reap(self, owner: str, now: datetime) -> int:
        """Nothing between starts: a restarted process takes over (`take_over`)."""
        return 0

    async def release_claims(self, owner: str, now: datetime) -> int:
        t = to_ts(now)
        released = await self.transact(lambda tx: release(tx, [owner], t))
        if self._claimer is not None:
            self._claimer.release(remove=True)
            self._claimer = None
        return released

    async def subscribe(self, callback: Callable[[str, str], None]) -> None:
        """One process owns a SQLite file: in-process hooks already wake its loops."""

    # ---------------------------------------------------------------- claims
    async def claim_due(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[Approval]:
        t, until = to_ts(now), to_ts(now + lease)
        return await self._engine.write(lambda c: claims.claim_due(c, t, owner, until, limit))

    async def claim_outbox(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[OutboxItem]:
        t, until = to_ts(now), to_ts(now + lease)
        return await self._engine.write(lambda c: claims.claim_outbox(c, t, owner, until, limit))

    async def claim_launches(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[ClaimedJob]:
        until = to_ts(now + lease)

        def op(conn: sqlite3.Connection) -> list[ClaimedJob]:  # the writer's transaction: one for all
            tx, jobs = SQLiteTx(conn), claims.claim_jobs(conn, now, owner, until, limit)
            return [run_at_once(functools.partial(launch_of, self.Q, job=job), tx) for job in jobs]

        return await self._engine.write(op)

    # ---------------------------------------------------------------- what differs from the shared use cases
    async def create_approval(self, approval: Approval, *args: Any, **kw: Any) -> tuple[Approval, bool]:
        try:
            return await super().create_approval(approval, *args, **kw)
        except sqlite3.IntegrityError:  # the random id collided (80 bits): the caller sees an error
            raise sqlite3.IntegrityError(f"approval id {approval.id} already exists") from None


def _snapshot(fn: Transaction[T], conn: sqlite3.Connection) -> T:
    """Run `fn` on the reader in one snapshot (autocommit otherwise: one per statement)."""
    conn.execute("BEGIN")
    try:
        return run_at_once(fn, SQLiteTx(conn))
    finally:
        conn.execute("COMMIT")
