"""SQLite store on aiosqlite: WAL, synchronous=FULL, one writer with group commit.

Each use case is one sync function run whole on the writer's thread. Concurrent use cases are
grouped into one SQLite transaction (one fsync), each inside its own SAVEPOINT so that a failing
one rolls back alone. Reads go to a second connection (WAL readers never block the writer).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sqlite3
import time
from collections.abc import Callable, Collection, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from gateway.core.clock import from_ts, to_ts
from gateway.core.errors import RunNotFound, StoreUnavailable
from gateway.core.models import (
    Approval,
    Card,
    DeliveryStatus,
    Event,
    JobStatus,
    NewEvent,
    NewOutbox,
    OutboxItem,
    ResumeJob,
    Status,
    StepRecord,
)
from gateway.store.base import CardUpdate, NewJob, Prompt, TransitionWrite
from gateway.store.migrations import MIGRATIONS
from gateway.store.queries import (
    ADOPT_CARD_SQL,
    ATTENTION_CARDS_SQL,
    CLAIM_RUN_SQL,
    CREATE_SESSION_SQL,
    DELETE_SESSION_SQL,
    DELETE_USER_SESSIONS_SQL,
    JOBS_OF_AGENT,
    PRUNE_SESSIONS_SQL,
    REQUEUE_POST_SQL,
    RUN_OWNER_SQL,
    SESSION_USER_SQL,
    SESSION_USERS_SQL,
    STEP_STATS_SQL,
    approvals_sql,
    claims_run,
    qmarks,
)
from gateway.store.rows import (
    APPROVAL_COLUMNS,
    APPROVAL_SELECT,
    POLICY_COLUMNS,
    approval_from_row,
    approval_from_values,
    approval_values,
    card_from_row,
    dumps,
    event_from_row,
    job_from_row,
    outbox_from_row,
    policy_values,
    step_from_row,
)

T = TypeVar("T")
Op = Callable[[sqlite3.Connection], Any]
_MAX_BATCH = 256
_INSERT_APPROVAL = (
    f"INSERT INTO approvals ({', '.join(APPROVAL_COLUMNS)}) VALUES ({', '.join('?' for _ in APPROVAL_COLUMNS)})"
)
_INSERT_APPROVAL_NEW = _INSERT_APPROVAL + " ON CONFLICT DO NOTHING"
_UPDATE_APPROVAL = (
    "UPDATE approvals SET "
    + ", ".join(f"{c} = ?" for c in APPROVAL_COLUMNS[1:])
    + ", wake_owner = NULL, wake_lease_until = NULL WHERE id = ? AND version = ?"
)

_UPDATE_POLICY = (
    "UPDATE approvals SET "
    + ", ".join(f"{c} = ?" for c in POLICY_COLUMNS)
    + ", wake_owner = NULL, wake_lease_until = NULL WHERE id = ? AND version = ?"
)

_CLAIM_DUE = (
    f"SELECT {APPROVAL_SELECT} FROM approvals WHERE wake_at IS NOT NULL AND wake_at <= ?"
    " AND (wake_lease_until IS NULL OR wake_lease_until <= ?) ORDER BY wake_at LIMIT ?"
)

# Outbox rows queued for delivery. Coalesced: one pending, unclaimed sync per card is enough, it
# renders the latest state (`_insert_queued` drops the others).
_INSERT_QUEUED = (
    "INSERT OR IGNORE INTO outbox (approval_id, channel, kind, status, attempts, next_attempt_at, data, created_at,"
    " updated_at) VALUES "
)
_PENDING_SYNCS = (
    "SELECT approval_id, channel FROM outbox WHERE kind = 'sync' AND status = 'pending' AND lease_owner IS NULL"
)
_INSERT_POSTED = (
    "INSERT INTO outbox (approval_id, channel, kind, status, attempts, next_attempt_at, data, created_at, updated_at)"
    " VALUES (?, ?, 'post', 'done', 1, ?, ?, ?, ?)"
)
_ADOPT_CARD = qmarks(ADOPT_CARD_SQL)
_REQUEUE_POST = qmarks(REQUEUE_POST_SQL)
_CLAIM_RUN, _RUN_OWNER = qmarks(CLAIM_RUN_SQL), qmarks(RUN_OWNER_SQL)
_CREATE_SESSION, _SESSION_USER = qmarks(CREATE_SESSION_SQL), qmarks(SESSION_USER_SQL)
_DELETE_SESSION, _DELETE_USER_SESSIONS = qmarks(DELETE_SESSION_SQL), qmarks(DELETE_USER_SESSIONS_SQL)
_PRUNE_SESSIONS = qmarks(PRUNE_SESSIONS_SQL)


async def _in_thread(db: aiosqlite.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    """Run `fn(conn)` whole on the connection's own thread: one hand-off per transaction,
    not one per statement. aiosqlite has no public hook for this; `_execute` is the queue
    every public method uses."""
    conn = db._conn
    result: T = await db._execute(fn, conn)  # type: ignore[no-untyped-call]
    return result


_ROWS_PER_INSERT = 100  # rows per multi-row INSERT: 6 * 100 parameters, far below SQLite's 32,766


def _insert_rows(conn: sqlite3.Connection, head: str, row: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """`executemany(head + row, rows)` with up to `_ROWS_PER_INSERT` rows per statement: each
    statement run has a fixed cost (the AUTOINCREMENT counter is written once per statement),
    and a storm inserts 10^5 events and jobs. The rows go in in order, each checked as alone."""
    full = len(rows) - len(rows) % _ROWS_PER_INSERT
    if full:
        chunks = [[v for r in rows[i : i + _ROWS_PER_INSERT] for v in r] for i in range(0, full, _ROWS_PER_INSERT)]
        conn.executemany(head + ", ".join([row] * _ROWS_PER_INSERT), chunks)
    if full < len(rows):
        conn.executemany(head + row, rows[full:])


def _insert_events(conn: sqlite3.Connection, events: Sequence[NewEvent]) -> None:
    if events:
        _insert_rows(
            conn,
            "INSERT INTO events (approval_id, kind, at, actor, channel, data) VALUES ",
            "(?, ?, ?, ?, ?, ?)",
            [(e.approval_id, e.kind, to_ts(e.at), e.actor, e.channel, dumps(e.data)) for e in events],
        )


def _update_all_or_each(conn: sqlite3.Connection, sql: str, rows: Sequence[tuple[Any, ...]]) -> list[bool]:
    """Run a one-row compare-and-set UPDATE for each of `rows`; which ones matched.

    One executemany first (the common case: every CAS wins); if any row did not match, undo it
    and run them one by one to learn which."""
    conn.execute("SAVEPOINT cas_all")
    try:
        if conn.executemany(sql, rows).rowcount == len(rows):
            return [True] * len(rows)
        conn.execute("ROLLBACK TO cas_all")
        return [conn.execute(sql, row).rowcount == 1 for row in rows]
    finally:
        conn.execute("RELEASE cas_all")


def _insert_jobs(conn: sqlite3.Connection, jobs: Sequence[NewJob], now: float) -> None:
    if jobs:
        _insert_rows(
            conn,
            "INSERT OR IGNORE INTO resume_jobs (approval_id, worker, status, attempts,"
            " next_attempt_at, created_at, updated_at) VALUES ",
            "(?, ?, 'queued', 0, ?, ?, ?)",
            [(job.approval_id, job.worker, now, now, now) for job in jobs],
        )


def _insert_outbox(conn: sqlite3.Connection, items: Sequence[NewOutbox], now: float) -> None:
    queued: list[tuple[Any, ...]] = []  # a run of queued rows goes in together (a storm: 500 syncs)
    for item in items:
        if item.ref is None:
            queued.append((item.approval_id, item.channel, item.kind.value, now, dumps(item.data), now, now))
            continue
        if queued:  # keep the rows in order
            _insert_queued(conn, queued)
            queued = []
        # posted in this commit: record it as the outbox would have
        conn.execute(_INSERT_POSTED, (item.approval_id, item.channel, now, dumps(item.data), now, now))
        posted = CardUpdate(item.channel, item.ref, DeliveryStatus.DONE)
        _upsert_card(conn, item.approval_id, posted, to_ts(item.posted_at) or now)
    if queued:
        _insert_queued(conn, queued)


def _insert_queued(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """Queue each row for delivery, in order, as multi-row inserts: a sync is coalesced away
    when its card already has a pending, unclaimed sync, in the table (one query for the run)
    or earlier in `rows`; what one statement per row did. Rows: (approval_id, channel, kind,
    now, data, now, now)."""
    pending: set[tuple[str, str]] = set()
    ids = list({r[0] for r in rows if r[2] == "sync"})
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        found = conn.execute(_PENDING_SYNCS + f" AND approval_id IN ({','.join('?' * len(chunk))})", chunk)
        pending.update((approval_id, channel) for approval_id, channel in found)  # tuples, not sqlite3.Row
    kept = []
    for row in rows:
        if row[2] == "sync":
            if (row[0], row[1]) in pending:
                continue
            pending.add((row[0], row[1]))
        kept.append(row)
    _insert_rows(conn, _INSERT_QUEUED, "(?, ?, ?, 'pending', 0, ?, ?, ?, ?)", kept)


class SQLiteStore:
    dialect = "sqlite"

    def __init__(self, path: str) -> None:
        self.path = path
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._queue: asyncio.Queue[tuple[Op, asyncio.Future[Any]] | None] = asyncio.Queue()
        self._writer_task: asyncio.Task[None] | None = None

    # ---------------------------------------------------------------- lifecycle
    async def _connect(self) -> aiosqlite.Connection:
        db = await aiosqlite.connect(self.path, isolation_level=None, timeout=30)
        db.row_factory = sqlite3.Row
        await db.execute("PRAGMA busy_timeout = 30000")
        await db.execute("PRAGMA foreign_keys = ON")
        return db

    async def open(self) -> None:
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._writer = await self._connect()
        try:
            await self._set_wal(self._writer)
            await self._writer.execute("PRAGMA synchronous = FULL")
            await _in_thread(self._writer, _migrate)
            self._reader = await self._connect() if self.path != ":memory:" else self._writer
        except BaseException:
            await self.close()  # no leaked connection threads
            raise
        self._writer_task = asyncio.create_task(self._write_loop(), name="sqlite-writer")

    @staticmethod
    async def _set_wal(db: aiosqlite.Connection, attempts: int = 200) -> None:
        """Switching a fresh file to WAL needs it to itself, and SQLite does not wait for that
        (no busy handler): when several processes open a new database at once, retry briefly."""
        for attempt in range(attempts):
            try:
                await db.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == attempts - 1:
                    raise
                await asyncio.sleep(0.05)

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

    async def schema_version(self) -> int:
        return int(await self._read(_schema_version))

    async def subscribe(self, callback: Callable[[str, str], None]) -> None:
        """One process owns a SQLite file: in-process hooks already wake its loops."""
        return None

    # ---------------------------------------------------------------- plumbing
    async def _write_loop(self) -> None:
        assert self._writer is not None
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
                results = await _in_thread(self._writer, functools.partial(_run_batch, ops=ops))
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

    async def _write(self, op: Callable[[sqlite3.Connection], T]) -> T:
        if self._writer_task is None or self._writer_task.done():
            raise StoreUnavailable("the store is closed")
        fut: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        await self._queue.put((op, fut))
        return await fut

    async def _read(self, op: Callable[[sqlite3.Connection], T]) -> T:
        if self._reader is None:
            raise StoreUnavailable("the store is closed")
        return await _in_thread(self._reader, op)

    # ---------------------------------------------------------------- approvals
    async def create_approval(
        self, approval: Approval, events: Sequence[NewEvent], outbox: Sequence[NewOutbox]
    ) -> tuple[Approval, bool]:
        values = approval_values(approval)  # encoded on the caller's thread, not the writer's

        def op(conn: sqlite3.Connection) -> tuple[Approval, bool]:
            if claims_run(approval.agent):  # before anything is written: raising leaves no trace
                claim = conn.execute(_CLAIM_RUN, (approval.run_id, approval.agent, to_ts(approval.created_at)))
                if claim.rowcount != 1 and conn.execute(_RUN_OWNER, (approval.run_id,)).fetchone()[0] != approval.agent:
                    raise RunNotFound(approval.run_id, str(approval.agent))
            # Insert first (one statement in the common case); read the winner only on a conflict.
            if conn.execute(_INSERT_APPROVAL_NEW, values).rowcount != 1:
                row = conn.execute(
                    "SELECT * FROM approvals WHERE idempotency_key = ?", (approval.idempotency_key,)
                ).fetchone()
                if row is None:  # the random id collided (80 bits): let the caller see an error
                    raise sqlite3.IntegrityError(f"approval id {approval.id} already exists")
                return approval_from_row(row), False
            _insert_events(conn, events)
            _insert_outbox(conn, outbox, time.time())
            return approval, True

        return await self._write(op)

    async def get_approval(self, approval_id: str) -> Approval | None:
        def op(conn: sqlite3.Connection) -> Approval | None:
            row = conn.execute("SELECT * FROM approvals WHERE id = ?", (approval_id,)).fetchone()
            return approval_from_row(row) if row else None

        return await self._read(op)

    async def list_approvals(
        self,
        *,
        status: Status | None = None,
        run_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
        agent: str | None = None,
    ) -> list[Approval]:
        sql, params = approvals_sql(status, run_id, None, agent=agent)
        sql += " ORDER BY created_at DESC, id LIMIT ? OFFSET ?"
        params += [limit, offset]
        return await self._read(lambda c: [approval_from_row(r) for r in c.execute(sql, params)])

    async def list_approvals_by_age(
        self,
        *,
        status: Status | None = None,
        run_id: str | None = None,
        channel: str | None = None,
        limit: int = 100,
    ) -> list[Approval]:
        sql, params = approvals_sql(status, run_id, channel)
        sql += " ORDER BY created_at, id LIMIT ?"
        params.append(limit)
        return await self._read(lambda c: [approval_from_row(r) for r in c.execute(sql, params)])

    async def save_transition(
        self,
        approval: Approval,
        expected_version: int,
        events: Sequence[NewEvent],
        outbox: Sequence[NewOutbox] = (),
        job: NewJob | None = None,
    ) -> bool:
        values = approval_values(approval)[1:]  # encoded on the caller's thread, not the writer's

        def op(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(_UPDATE_APPROVAL, (*values, approval.id, expected_version))
            if cur.rowcount != 1:
                return False
            now = time.time()
            _insert_events(conn, events)
            _insert_outbox(conn, outbox, now)
            _insert_jobs(conn, [job] if job is not None else [], now)
            return True

        return await self._write(op)

    async def save_policy_transitions(self, writes: Sequence[TransitionWrite]) -> list[bool]:
        values = [(*policy_values(w.approval), w.approval.id, w.expected_version) for w in writes]

        def op(conn: sqlite3.Connection) -> list[bool]:
            won = _update_all_or_each(conn, _UPDATE_POLICY, values)
            done = [w for w, ok in zip(writes, won, strict=True) if ok] if not all(won) else writes
            now = time.time()
            _insert_events(conn, [e for w in done for e in w.events])
            _insert_outbox(conn, [o for w in done for o in w.outbox], now)
            _insert_jobs(conn, [w.job for w in done if w.job is not None], now)
            return won

        return await self._write(op)

    async def due_approvals(self, now: datetime, limit: int) -> list[Approval]:
        sql = "SELECT * FROM approvals WHERE wake_at IS NOT NULL AND wake_at <= ? ORDER BY wake_at LIMIT ?"
        return await self._read(lambda c: [approval_from_row(r) for r in c.execute(sql, (to_ts(now), limit))])

    async def claim_due(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[Approval]:
        t, until = to_ts(now), to_ts(now + lease)

        def op(conn: sqlite3.Connection) -> list[Approval]:
            # ORDER BY wake_at alone: the index walk stops after `limit` rows. With `, id` SQLite
            # sorts every row that shares a wake_at (a storm of 10^5 equal deadlines: all of
            # them, per batch), which made a timeout storm quadratic. Ties come in rowid order.
            # The rows are read before the lease is written (in the same transaction, which holds
            # the write lock): the lease columns are not part of an Approval, so nothing differs.
            # Plain tuples in APPROVAL_COLUMNS order: decoded by position, not by name.
            cur = conn.cursor()
            cur.row_factory = None
            rows = cur.execute(_CLAIM_DUE, (t, t, limit)).fetchall()
            if not rows:
                return []
            ids = [r[0] for r in rows]
            marks = ",".join("?" * len(ids))
            conn.execute(
                f"UPDATE approvals SET wake_owner = ?, wake_lease_until = ? WHERE id IN ({marks})", (owner, until, *ids)
            )
            return sorted(map(approval_from_values, rows), key=lambda a: (a.wake_at, a.id))

        return await self._write(op)

    async def next_wake_at(self) -> datetime | None:
        row = await self._read(
            lambda c: c.execute("SELECT MIN(wake_at) FROM approvals WHERE wake_at IS NOT NULL").fetchone()
        )
        return from_ts(row[0])

    async def count_by_status(self) -> dict[str, int]:
        rows = await self._read(
            lambda c: c.execute("SELECT status, COUNT(*) FROM approvals GROUP BY status").fetchall()
        )
        return {r[0]: r[1] for r in rows}

    # ---------------------------------------------------------------- events
    async def append_events(self, events: Sequence[NewEvent]) -> None:
        await self._write(lambda c: _insert_events(c, events))

    async def list_events(self, approval_id: str) -> list[Event]:
        sql = "SELECT * FROM events WHERE approval_id = ? ORDER BY id"
        return await self._read(lambda c: [event_from_row(r) for r in c.execute(sql, (approval_id,))])

    async def last_event_id(self) -> int:
        row = await self._read(lambda c: c.execute("SELECT MAX(id) FROM events").fetchone())
        return int(row[0] or 0)

    # ---------------------------------------------------------------- outbox and cards
    async def claim_outbox(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[OutboxItem]:
        t, until = to_ts(now), to_ts(now + lease)

        def op(conn: sqlite3.Connection) -> list[OutboxItem]:
            rows = conn.execute(
                "SELECT id FROM outbox WHERE status = 'pending' AND next_attempt_at <= ?"
                " AND (lease_until IS NULL OR lease_until <= ?)"
                # one owner at a time per card, so that its post, syncs and reminders stay in order
                " AND NOT EXISTS (SELECT 1 FROM outbox busy WHERE busy.approval_id = outbox.approval_id"
                " AND busy.channel = outbox.channel AND busy.lease_until > ?)"
                " ORDER BY next_attempt_at, id LIMIT ?",
                (t, t, t, limit),
            ).fetchall()
            ids = [r[0] for r in rows]
            if not ids:
                return []
            marks = ",".join("?" * len(ids))
            conn.execute(
                f"UPDATE outbox SET lease_owner = ?, lease_until = ? WHERE id IN ({marks})",
                (owner, until, *ids),
            )
            claimed = conn.execute(f"SELECT * FROM outbox WHERE id IN ({marks}) ORDER BY id", ids)
            return [outbox_from_row(r) for r in claimed]

        return await self._write(op)

    async def finish_outbox(
        self,
        item_id: int,
        owner: str,
        *,
        now: datetime,
        status: DeliveryStatus,
        next_attempt_at: datetime | None = None,
        error: str | None = None,
        card: CardUpdate | None = None,
        events: Sequence[NewEvent] = (),
        count_attempt: bool = True,
    ) -> bool:
        t = to_ts(now)

        def op(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                "UPDATE outbox SET status = ?, attempts = attempts + ?, next_attempt_at = COALESCE(?, next_attempt_at),"
                " last_error = ?, lease_owner = NULL, lease_until = NULL, updated_at = ?"
                " WHERE id = ? AND lease_owner = ?",
                (status.value, int(count_attempt), to_ts(next_attempt_at), error, t, item_id, owner),
            )
            if cur.rowcount != 1:
                return False
            if card is not None:
                row = conn.execute("SELECT approval_id FROM outbox WHERE id = ?", (item_id,)).fetchone()
                _upsert_card(conn, row[0], card, t)
            _insert_events(conn, events)
            return True

        return await self._write(op)

    async def enqueue_outbox(self, items: Sequence[NewOutbox], now: datetime) -> None:
        await self._write(lambda c: _insert_outbox(c, items, to_ts(now) or time.time()))

    async def list_outbox(self, approval_id: str) -> list[OutboxItem]:
        sql = "SELECT * FROM outbox WHERE approval_id = ? ORDER BY id"
        return await self._read(lambda c: [outbox_from_row(r) for r in c.execute(sql, (approval_id,))])

    async def get_card(self, approval_id: str, channel: str) -> Card | None:
        def op(conn: sqlite3.Connection) -> Card | None:
            row = conn.execute(
                "SELECT * FROM cards WHERE approval_id = ? AND channel = ?", (approval_id, channel)
            ).fetchone()
            return card_from_row(row) if row else None

        return await self._read(op)

    async def list_cards(self, approval_id: str) -> list[Card]:
        sql = "SELECT * FROM cards WHERE approval_id = ? ORDER BY channel"
        return await self._read(lambda c: [card_from_row(r) for r in c.execute(sql, (approval_id,))])

    async def cards_needing_attention(self, limit: int = 50) -> list[Card]:
        sql = qmarks(ATTENTION_CARDS_SQL)
        return await self._read(lambda c: [card_from_row(r) for r in c.execute(sql, (limit,))])

    async def requeue_post(self, approval_id: str, channel: str, now: datetime, events: Sequence[NewEvent]) -> bool:
        t = to_ts(now)

        def op(conn: sqlite3.Connection) -> bool:
            if conn.execute(_REQUEUE_POST, (t, t, approval_id, channel)).rowcount != 1:
                return False
            _insert_events(conn, events)
            return True

        return await self._write(op)

    async def adopt_card(
        self, approval_id: str, channel: str, ref: str, now: datetime, events: Sequence[NewEvent] = ()
    ) -> bool:
        t = to_ts(now)

        def op(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(_ADOPT_CARD, (approval_id, channel, ref, t, t))
            if cur.rowcount != 1:
                return False
            _insert_events(conn, events)
            return True

        return await self._write(op)

    # ---------------------------------------------------------------- resume jobs
    async def claim_jobs(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[ResumeJob]:
        t, until = to_ts(now), to_ts(now + lease)

        def op(conn: sqlite3.Connection) -> list[ResumeJob]:
            rows = conn.execute(
                "SELECT id FROM resume_jobs WHERE (status = 'queued' AND next_attempt_at <= ?)"
                " OR (status = 'running' AND lease_until <= ?) ORDER BY next_attempt_at, id LIMIT ?",
                (t, t, limit),
            ).fetchall()
            ids = [r[0] for r in rows]
            if not ids:
                return []
            marks = ",".join("?" * len(ids))
            conn.execute(
                f"UPDATE resume_jobs SET status = 'running', claimed_by = ?, lease_until = ?,"
                f" attempts = attempts + 1, updated_at = ? WHERE id IN ({marks})",
                (owner, until, t, *ids),
            )
            return [job_from_row(r) for r in conn.execute(f"SELECT * FROM resume_jobs WHERE id IN ({marks})", ids)]

        return await self._write(op)

    async def finish_job(
        self,
        job_id: int,
        owner: str,
        *,
        now: datetime,
        status: JobStatus,
        next_attempt_at: datetime | None = None,
        error: str | None = None,
        output_tail: str | None = None,
        events: Sequence[NewEvent] = (),
    ) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                "UPDATE resume_jobs SET status = ?, next_attempt_at = COALESCE(?, next_attempt_at),"
                " last_error = ?, output_tail = COALESCE(?, output_tail), claimed_by = NULL, lease_until = NULL,"
                " updated_at = ? WHERE id = ? AND claimed_by = ? AND status = 'running'",
                (status.value, to_ts(next_attempt_at), error, output_tail, to_ts(now), job_id, owner),
            )
            if cur.rowcount != 1:
                return False
            _insert_events(conn, events)
            return True

        return await self._write(op)

    async def extend_job_lease(self, job_id: int, owner: str, until: datetime) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                "UPDATE resume_jobs SET lease_until = ? WHERE id = ? AND claimed_by = ? AND status = 'running'",
                (to_ts(until), job_id, owner),
            )
            return cur.rowcount == 1

        return await self._write(op)

    async def get_job(self, approval_id: str) -> ResumeJob | None:
        def op(conn: sqlite3.Connection) -> ResumeJob | None:
            row = conn.execute("SELECT * FROM resume_jobs WHERE approval_id = ?", (approval_id,)).fetchone()
            return job_from_row(row) if row else None

        return await self._read(op)

    async def list_jobs(
        self, status: JobStatus | None = None, limit: int = 100, *, agent: str | None = None
    ) -> list[ResumeJob]:
        where, params = ["1 = 1"], []
        if status is not None:
            where.append("status = ?")
            params.append(status.value)
        if agent is not None:
            where.append(JOBS_OF_AGENT.format(mark="?"))
            params.append(agent)
        sql = f"SELECT * FROM resume_jobs WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT ?"
        return await self._read(lambda c: [job_from_row(r) for r in c.execute(sql, (*params, limit))])

    async def count_jobs_by_status(self) -> dict[str, int]:
        sql = "SELECT status, COUNT(*) FROM resume_jobs GROUP BY status"
        rows = await self._read(lambda c: c.execute(sql).fetchall())
        return {r[0]: r[1] for r in rows}

    async def requeue_job(self, approval_id: str, now: datetime, events: Sequence[NewEvent]) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                "UPDATE resume_jobs SET status = 'queued', attempts = 0, next_attempt_at = ?, updated_at = ?,"
                " last_error = NULL WHERE approval_id = ? AND status = 'failed'",
                (to_ts(now), to_ts(now), approval_id),
            )
            if cur.rowcount != 1:
                return False
            _insert_events(conn, events)
            return True

        return await self._write(op)

    # ---------------------------------------------------------------- journal
    async def get_steps(self, run_id: str) -> list[StepRecord]:
        sql = "SELECT * FROM journal WHERE run_id = ? ORDER BY started_at, name"
        return await self._read(lambda c: [step_from_row(r) for r in c.execute(sql, (run_id,))])

    async def record_step(self, step: StepRecord) -> StepRecord:
        def op(conn: sqlite3.Connection) -> StepRecord:
            conn.execute(
                "INSERT INTO journal (run_id, name, status, output, attempts, started_at, finished_at, error)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, name) DO UPDATE SET"
                " status = excluded.status, output = excluded.output, attempts = excluded.attempts,"
                " started_at = excluded.started_at, finished_at = excluded.finished_at, error = excluded.error"
                " WHERE journal.status <> 'succeeded'",
                (
                    step.run_id,
                    step.name,
                    step.status.value,
                    None if step.output is None else dumps(step.output),
                    step.attempts,
                    to_ts(step.started_at),
                    to_ts(step.finished_at),
                    step.error,
                ),
            )
            row = conn.execute(
                "SELECT * FROM journal WHERE run_id = ? AND name = ?", (step.run_id, step.name)
            ).fetchone()
            return step_from_row(row)

        return await self._write(op)

    async def list_runs(self, limit: int = 100) -> list[dict[str, Any]]:
        sql = (
            "SELECT run_id, COUNT(*) AS steps, SUM(attempts) AS attempts, MIN(started_at) AS started_at,"
            " MAX(finished_at) AS last_at FROM journal GROUP BY run_id ORDER BY last_at DESC LIMIT ?"
        )
        rows = await self._read(lambda c: c.execute(sql, (limit,)).fetchall())
        return [dict(r) for r in rows]

    async def step_stats(self, limit: int = 100) -> list[dict[str, Any]]:
        rows = await self._read(lambda c: c.execute(qmarks(STEP_STATS_SQL), (limit,)).fetchall())
        return [dict(r) for r in rows]

    # ---------------------------------------------------------------- inbound de-duplication
    async def remember_inbound(self, key: str, now: datetime) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            cur = conn.execute("INSERT OR IGNORE INTO inbound (key, at) VALUES (?, ?)", (key, to_ts(now)))
            return cur.rowcount == 1

        return await self._write(op)

    async def prune(self, now: datetime, inbound_before: datetime, limit: int) -> int:
        def op(conn: sqlite3.Connection) -> int:
            marks = conn.execute(
                "DELETE FROM inbound WHERE key IN (SELECT key FROM inbound WHERE at < ? LIMIT ?)",
                (to_ts(inbound_before), limit),
            ).rowcount
            prompts = conn.execute("DELETE FROM prompts WHERE expires_at <= ?", (to_ts(now),)).rowcount
            return marks + prompts + conn.execute(_PRUNE_SESSIONS, (to_ts(now),)).rowcount

        return await self._write(op)

    # ---------------------------------------------------------------- run owners (migration v11)
    async def claim_run(self, run_id: str, owner: str, now: datetime) -> str:
        def op(conn: sqlite3.Connection) -> str:
            if conn.execute(_CLAIM_RUN, (run_id, owner, to_ts(now))).rowcount == 1:
                return owner
            return str(conn.execute(_RUN_OWNER, (run_id,)).fetchone()[0])

        return await self._write(op)

    async def run_owner(self, run_id: str) -> str | None:
        def op(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(_RUN_OWNER, (run_id,)).fetchone()
            return None if row is None else str(row[0])

        return await self._read(op)

    # ---------------------------------------------------------------- web sessions (migration v11)
    async def create_session(self, session_id: str, user: str, now: datetime, expires_at: datetime) -> None:
        await self._write(lambda c: c.execute(_CREATE_SESSION, (session_id, user, to_ts(now), to_ts(expires_at))))

    async def session_user(self, session_id: str, now: datetime) -> str | None:
        def op(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(_SESSION_USER, (session_id, to_ts(now))).fetchone()
            return None if row is None else str(row[0])

        return await self._read(op)

    async def delete_session(self, session_id: str) -> bool:
        return bool(await self._write(lambda c: c.execute(_DELETE_SESSION, (session_id,)).rowcount == 1))

    async def delete_sessions(self, keep_users: Collection[str]) -> int:
        def op(conn: sqlite3.Connection) -> int:
            gone = [u for (u,) in conn.execute(SESSION_USERS_SQL) if u not in keep_users]
            return sum(conn.execute(_DELETE_USER_SESSIONS, (u,)).rowcount for u in gone)

        return await self._write(op)

    # ---------------------------------------------------------------- prompts (migration v2)
    async def save_prompt(self, prompt: Prompt) -> None:
        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO prompts (key, approval_id, actor, purpose, created_at, expires_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    prompt.key,
                    prompt.approval_id,
                    prompt.actor,
                    prompt.purpose,
                    to_ts(prompt.created_at),
                    to_ts(prompt.expires_at),
                ),
            )

        await self._write(op)

    async def take_prompt(self, key: str, actor: str, now: datetime) -> Prompt | None:
        def op(conn: sqlite3.Connection) -> Prompt | None:
            conn.execute("DELETE FROM prompts WHERE expires_at <= ?", (to_ts(now),))
            row = conn.execute("SELECT * FROM prompts WHERE key = ? AND actor = ?", (key, actor)).fetchone()
            if row is None:
                return None
            conn.execute("DELETE FROM prompts WHERE key = ?", (key,))
            created, expires = from_ts(row["created_at"]), from_ts(row["expires_at"])
            assert created is not None and expires is not None
            return Prompt(row["key"], row["approval_id"], row["actor"], row["purpose"], created, expires)

        return await self._write(op)


def _upsert_card(conn: sqlite3.Connection, approval_id: str, card: CardUpdate, now: float | None) -> None:
    channel = card.channel
    posted = now if card.status is DeliveryStatus.DONE else None
    conn.execute(
        "INSERT INTO cards (approval_id, channel, ref, status, error, posted_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (approval_id, channel) DO UPDATE SET"
        " ref = COALESCE(excluded.ref, cards.ref), status = excluded.status, error = excluded.error,"
        " updated_at = excluded.updated_at",
        (approval_id, channel, card.ref, card.status.value, card.error, posted, now),
    )


def _run_batch(conn: sqlite3.Connection, *, ops: Sequence[Op]) -> list[Any]:
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


def _schema_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").fetchone()
    if row is None:
        return 0
    return int(conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[0])


def _migrate(conn: sqlite3.Connection) -> int:
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations"
            " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
        )
        # Every version not applied yet, in order (not just those above the highest: branches
        # number their migrations ahead of time, so a lower one can arrive after a higher one).
        applied = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
        for m in MIGRATIONS:
            if m.version not in applied:
                for statement in _split(m.sqlite):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    (m.version, m.name, time.time()),
                )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return _schema_version(conn)


def _split(script: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies (BEGIN ... END;) whole."""
    out, buf = [], ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out
