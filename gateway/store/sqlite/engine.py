"""The SQLite writer engine: connections on threads of their own, one writer with group commit.

Each use case is one sync function of a `sqlite3.Connection` (an `Op`), run whole on the
writer's thread: one hand-off per transaction, not one per statement. Concurrent use cases are
grouped into one SQLite transaction (one fsync), each inside its own SAVEPOINT only if one of
them fails, so that it rolls back alone. Reads go to a second connection (WAL readers never
block the writer). WAL, synchronous=FULL: a committed use case survives a power cut.

What runs inside an `Op` is in sqlite/store.py; this module knows no table.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import queue
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from gateway.core.errors import StoreUnavailable

__all__ = ["Engine", "Op", "SQLiteThread"]

T = TypeVar("T")
Op = Callable[[sqlite3.Connection], Any]
_MAX_BATCH = 256


class SQLiteThread:
    """One `sqlite3.Connection`, used only on one thread of its own: `await run(fn)` calls
    `fn(conn)` there. A queue and `call_soon_threadsafe`, as aiosqlite does inside, but public:
    aiosqlite has no public way to run a whole function on its thread, and
    `loop.run_in_executor` on a one-thread pool costs ~12 us more per hand-off here."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[tuple[asyncio.Future[Any], Callable[[Any], Any], Any] | None] = (
            queue.SimpleQueue()
        )
        self._conn: sqlite3.Connection | None = None
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            fut, fn, arg = job
            try:
                result = fn(arg)
            except BaseException as exc:  # handed to the awaiting coroutine
                _hand_back(fut, _set_exception, exc)
            else:
                _hand_back(fut, _set_result, result)

    def _submit(self, fn: Callable[[Any], T], arg: Any) -> asyncio.Future[T]:
        fut: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._jobs.put((fut, fn, arg))
        return fut

    async def connect(self, path: str) -> None:
        def connect(_: None) -> sqlite3.Connection:
            conn = sqlite3.connect(path, isolation_level=None, timeout=30, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA busy_timeout = 30000")
            conn.execute("PRAGMA foreign_keys = ON")
            return conn

        self._conn = await self._submit(connect, None)

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._conn is None:
            raise StoreUnavailable("the store is closed")
        return await self._submit(fn, self._conn)

    async def close(self) -> None:
        """Close the connection (if open) and end the thread."""
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await self._submit(lambda _: conn.close(), None)
        self._jobs.put(None)


def _hand_back(fut: asyncio.Future[Any], setter: Callable[[asyncio.Future[Any], Any], None], value: Any) -> None:
    with contextlib.suppress(RuntimeError):  # the event loop is closed: nobody waits any more
        fut.get_loop().call_soon_threadsafe(setter, fut, value)


def _set_result(fut: asyncio.Future[Any], result: Any) -> None:
    if not fut.done():
        fut.set_result(result)


def _set_exception(fut: asyncio.Future[Any], exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)


class Engine:
    """The writer (group commit) and the reader of one SQLite file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._writer: SQLiteThread | None = None
        self._reader: SQLiteThread | None = None
        self._queue: asyncio.Queue[tuple[Op, asyncio.Future[Any]] | None] = asyncio.Queue()
        self._writer_task: asyncio.Task[None] | None = None

    async def open(self, setup: Op) -> Any:
        """Connect, switch to WAL with synchronous=FULL, run `setup` (the migrations) on the
        writer, then start the write loop; returns what `setup` returned."""
        memory = self.path == ":memory:"
        if not memory:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._writer = SQLiteThread(f"sqlite-writer {self.path}")
            await self._writer.connect(self.path)
            await _set_wal(self._writer)
            await self._writer.run(lambda c: c.execute("PRAGMA synchronous = FULL"))
            result = await self._writer.run(setup)
            if memory:
                self._reader = self._writer
            else:
                self._reader = SQLiteThread(f"sqlite-reader {self.path}")
                await self._reader.connect(self.path)
        except BaseException:
            await self.close()  # no leaked connection threads
            raise
        self._writer_task = asyncio.create_task(self._write_loop(), name="sqlite-writer")
        return result

    async def close(self) -> None:
        if self._writer_task is not None:
            await self._queue.put(None)
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer_task
            self._writer_task = None
        if self._reader is not None and self._reader is not self._writer:
            await self._reader.close()
        if self._writer is not None:
            await self._writer.close()
        self._reader = self._writer = None

    async def write(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """Run `op` in the writer's next transaction (with whatever else is queued)."""
        if self._writer_task is None or self._writer_task.done():
            raise StoreUnavailable("the store is closed")
        fut: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        await self._queue.put((op, fut))
        return await fut

    async def read(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """Run `op` on the reader connection (one statement sees one snapshot)."""
        if self._reader is None:
            raise StoreUnavailable("the store is closed")
        return await self._reader.run(op)

    async def _write_loop(self) -> None:
        assert self._writer is not None
        writer = self._writer
        while True:
            first = await self._queue.get()
            if first is None:
                return
            batch = [first]
            stop = False
            while len(batch) < _MAX_BATCH and not self._queue.empty():
                nxt = self._queue.get_nowait()
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            ops = [op for op, _ in batch]
            try:
                results = await writer.run(functools.partial(run_batch, ops=ops))
            except Exception as exc:  # the COMMIT itself failed: nothing was written
                results = [exc] * len(batch)
            for (_, fut), result in zip(batch, results, strict=True):
                if fut.done():
                    continue
                if isinstance(result, BaseException):
                    fut.set_exception(result)
                else:
                    fut.set_result(result)
            if stop:
                return


async def _set_wal(db: SQLiteThread, attempts: int = 200) -> None:
    """Switching a fresh file to WAL needs it to itself, and SQLite does not wait for that
    (no busy handler): when several processes open a new database at once, retry briefly."""
    for attempt in range(attempts):
        try:
            await db.run(lambda c: c.execute("PRAGMA journal_mode = WAL"))
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            await asyncio.sleep(0.05)


def run_batch(conn: sqlite3.Connection, ops: Sequence[Op]) -> list[Any]:
    """One transaction for the whole batch. Fast path: no per-op savepoint. If any op raises,
    the transaction is rolled back whole and the batch re-runs with a savepoint per op, so that
    only the failing op is lost (ops are pure functions of the connection: safe to re-run)."""
    try:
        return _in_transaction(conn, lambda: [op(conn) for op in ops])
    except Exception:
        return _in_transaction(conn, lambda: [_isolated(conn, op) for op in ops])


def _isolated(conn: sqlite3.Connection, op: Op) -> Any:
    conn.execute("SAVEPOINT op")
    try:
        result = op(conn)
    except Exception as exc:
        conn.execute("ROLLBACK TO op")
        result = exc
    conn.execute("RELEASE op")
    return result


def _in_transaction(conn: sqlite3.Connection, body: Callable[[], list[Any]]) -> list[Any]:
    """BEGIN IMMEDIATE, body, COMMIT; anything raised (the COMMIT included) rolls back and propagates."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        results = body()
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return results
