"""The SQLite store: each use case is one `Op` on the writer engine (engine.py), its SQL by
name from gateway/store/sql/ (queries.sql, and sqlite.sql for what differs)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Collection, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from gateway.core.clock import from_ts, to_ts
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
from gateway.store.rows import (
    approval_from_row,
    approval_values,
    card_from_row,
    dumps,
    event_from_row,
    job_from_row,
    outbox_from_row,
    policy_values,
    step_from_row,
)
from gateway.store.sql import approvals_sql, queries
from gateway.store.sqlite import claims
from gateway.store.sqlite.audit import SQLiteAudit
from gateway.store.sqlite.engine import Engine
from gateway.store.sqlite.migrate import migrate, schema_version
from gateway.store.sqlite.serve_lock import FileLock, claimer_gone, claimer_lock, serve_lock
from gateway.store.sqlite.writes import (
    encode_events,
    insert_events,
    insert_jobs,
    insert_outbox,
    update_all_or_each,
    upsert_card,
)

__all__ = ["SQLiteStore"]

T = TypeVar("T")
Q = queries("sqlite")


class SQLiteStore(SQLiteAudit):
    dialect = "sqlite"

    def __init__(self, path: str) -> None:
        self.path = path
        self._engine = Engine(path)
        self._serve_lock: FileLock | None = None  # held by a `serve` (serve_lock.py)
        self._claimer: FileLock | None = None  # held by any process that claims work

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
        held = await self._read(claims.owners)
        gone = [o for o in held if o != owner and claimer_gone(self.path, o, serving=serving)]
        if not gone:
            return 0
        t = to_ts(now)
        return await self._write(lambda c: claims.release_owners(c, gone, t))

    async def reap(self, owner: str, now: datetime) -> int:
        """Nothing between starts: a restarted process takes over (`take_over`)."""
        return 0

    async def release_claims(self, owner: str, now: datetime) -> int:
        t = to_ts(now)
        released = await self._write(lambda c: claims.release(c, owner, t))
        if self._claimer is not None:
            self._claimer.release(remove=True)
            self._claimer = None
        return released

    async def schema_version(self) -> int:
        return await self._read(schema_version)

    async def subscribe(self, callback: Callable[[str, str], None]) -> None:
        """One process owns a SQLite file: in-process hooks already wake its loops."""
        return None

    async def _write(self, op: Callable[[sqlite3.Connection], T]) -> T:
        return await self._engine.write(op)

    async def _read(self, op: Callable[[sqlite3.Connection], T]) -> T:
        return await self._engine.read(op)

    async def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        return await self._read(lambda c: c.execute(sql, params).fetchall())

    async def _row(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        row: sqlite3.Row | None = await self._read(lambda c: c.execute(sql, params).fetchone())
        return row

    async def _changed(self, sql: str, params: Sequence[Any], events: Sequence[NewEvent] = ()) -> bool:
        """One-row UPDATE (or INSERT); the events only if it changed a row."""
        encoded = encode_events(events)

        def op(conn: sqlite3.Connection) -> bool:
            if conn.execute(sql, params).rowcount != 1:
                return False
            insert_events(conn, encoded)
            return True

        return await self._write(op)

    # ---------------------------------------------------------------- approvals
    async def create_approval(
        self, approval: Approval, events: Sequence[NewEvent], outbox: Sequence[NewOutbox]
    ) -> tuple[Approval, bool]:
        namespace = approval.namespace
        values = (*approval_values(approval), namespace)  # encoded on the caller's thread, not the writer's
        encoded = encode_events(events)
        fresh = all(e.approval_id == approval.id for e in events)  # its own events: no head to read

        def op(conn: sqlite3.Connection) -> tuple[Approval, bool]:
            # Insert first (one statement in the common case); read the winner only on a conflict.
            try:
                inserted = conn.execute(Q.insert_approval, values).rowcount == 1
            except sqlite3.IntegrityError:  # the random id collided (80 bits): the caller sees an error
                raise sqlite3.IntegrityError(f"approval id {approval.id} already exists") from None
            if not inserted:
                row = conn.execute(Q.approval_by_key, (namespace, approval.idempotency_key)).fetchone()
                return approval_from_row(row), False
            insert_events(conn, encoded, fresh=fresh)
            insert_outbox(conn, outbox, time.time())
            return approval, True

        return await self._write(op)

    async def get_approval(self, approval_id: str) -> Approval | None:
        row = await self._row(Q.get_approval, (approval_id,))
        return approval_from_row(row) if row else None

    async def list_approvals(
        self,
        *,
        status: Status | None = None,
        run_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
        agent: str | None = None,
    ) -> list[Approval]:
        sql, params = approvals_sql("sqlite", status, run_id, None, "newest", offset=True, agent=agent)
        return [approval_from_row(r) for r in await self._rows(sql, [*params, limit, offset])]

    async def list_approvals_by_age(
        self,
        *,
        status: Status | None = None,
        run_id: str | None = None,
        channel: str | None = None,
        limit: int = 100,
    ) -> list[Approval]:
        sql, params = approvals_sql("sqlite", status, run_id, channel, "oldest")
        return [approval_from_row(r) for r in await self._rows(sql, [*params, limit])]

    async def save_transition(
        self,
        approval: Approval,
        expected_version: int,
        events: Sequence[NewEvent],
        outbox: Sequence[NewOutbox] = (),
        job: NewJob | None = None,
    ) -> bool:
        values = (*approval_values(approval)[1:], approval.id, expected_version)  # encoded here, not on the writer
        encoded = encode_events(events)

        def op(conn: sqlite3.Connection) -> bool:
            if conn.execute(Q.save_transition, values).rowcount != 1:
                return False
            now = time.time()
            insert_events(conn, encoded)
            insert_outbox(conn, outbox, now)
            insert_jobs(conn, [job] if job is not None else [], now)
            return True

        return await self._write(op)

    async def save_policy_transitions(self, writes: Sequence[TransitionWrite]) -> list[bool]:
        values = [(*policy_values(w.approval), w.approval.id, w.expected_version) for w in writes]
        encoded = [encode_events(w.events) for w in writes]

        def op(conn: sqlite3.Connection) -> list[bool]:
            won = update_all_or_each(conn, Q.save_policy_transition, values)
            done = [(w, enc) for w, enc, ok in zip(writes, encoded, won, strict=True) if ok]
            now = time.time()
            insert_events(conn, [e for _, enc in done for e in enc])
            insert_outbox(conn, [o for w, _ in done for o in w.outbox], now)
            insert_jobs(conn, [w.job for w, _ in done if w.job is not None], now)
            return won

        return await self._write(op)

    async def due_approvals(self, now: datetime, limit: int) -> list[Approval]:
        return [approval_from_row(r) for r in await self._rows(Q.due_approvals, (to_ts(now), limit))]

    async def claim_due(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[Approval]:
        t, until = to_ts(now), to_ts(now + lease)
        return await self._write(lambda c: claims.claim_due(c, t, owner, until, limit))

    async def next_wake_at(self) -> datetime | None:
        row = await self._row(Q.next_wake_at)
        return from_ts(row[0]) if row else None

    async def count_by_status(self) -> dict[str, int]:
        return {r[0]: r[1] for r in await self._rows(Q.count_by_status)}

    # ---------------------------------------------------------------- events
    async def append_events(self, events: Sequence[NewEvent]) -> None:
        encoded = encode_events(events)
        await self._write(lambda c: insert_events(c, encoded))

    async def list_events(self, approval_id: str) -> list[Event]:
        return [event_from_row(r) for r in await self._rows(Q.list_events, (approval_id,))]

    async def last_event_id(self) -> int:
        row = await self._row(Q.last_event_id)
        return int(row[0]) if row else 0

    # ---------------------------------------------------------------- outbox and cards
    async def claim_outbox(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[OutboxItem]:
        t, until = to_ts(now), to_ts(now + lease)
        return await self._write(lambda c: claims.claim_outbox(c, t, owner, until, limit))

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
        values = (status.value, int(count_attempt), to_ts(next_attempt_at), error, t, item_id, owner)
        encoded = encode_events(events)

        def op(conn: sqlite3.Connection) -> bool:
            if conn.execute(Q.finish_outbox, values).rowcount != 1:
                return False
            if card is not None:
                upsert_card(conn, conn.execute(Q.outbox_approval, (item_id,)).fetchone()[0], card, t)
            insert_events(conn, encoded)
            return True

        return await self._write(op)

    async def enqueue_outbox(self, items: Sequence[NewOutbox], now: datetime) -> None:
        await self._write(lambda c: insert_outbox(c, items, to_ts(now) or time.time()))

    async def list_outbox(self, approval_id: str) -> list[OutboxItem]:
        return [outbox_from_row(r) for r in await self._rows(Q.list_outbox, (approval_id,))]

    async def get_card(self, approval_id: str, channel: str) -> Card | None:
        row = await self._row(Q.get_card, (approval_id, channel))
        return card_from_row(row) if row else None

    async def list_cards(self, approval_id: str) -> list[Card]:
        return [card_from_row(r) for r in await self._rows(Q.list_cards, (approval_id,))]

    async def cards_needing_attention(self, limit: int = 50) -> list[Card]:
        return [card_from_row(r) for r in await self._rows(Q.cards_needing_attention, (limit,))]

    async def requeue_post(self, approval_id: str, channel: str, now: datetime, events: Sequence[NewEvent]) -> bool:
        return await self._changed(Q.requeue_post, (to_ts(now), approval_id, channel), events)

    async def adopt_card(
        self, approval_id: str, channel: str, ref: str, now: datetime, events: Sequence[NewEvent] = ()
    ) -> bool:
        t = to_ts(now)
        return await self._changed(Q.adopt_card, (approval_id, channel, ref, t, t), events)

    async def move_card(
        self, approval_id: str, channel: str, old_ref: str, new_ref: str, now: datetime, events: Sequence[NewEvent] = ()
    ) -> bool:
        return await self._changed(Q.move_card, (new_ref, to_ts(now), approval_id, channel, old_ref), events)

    # ---------------------------------------------------------------- resume jobs
    async def claim_jobs(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[ResumeJob]:
        t, until = to_ts(now), to_ts(now + lease)
        return await self._write(lambda c: claims.claim_jobs(c, t, owner, until, limit))

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
        values = (status.value, to_ts(next_attempt_at), error, output_tail, to_ts(now), job_id, owner)
        return await self._changed(Q.finish_job, values, events)

    async def extend_job_lease(self, job_id: int, owner: str, until: datetime) -> bool:
        return await self._changed(Q.extend_job_lease, (to_ts(until), job_id, owner))

    async def get_job(self, approval_id: str) -> ResumeJob | None:
        row = await self._row(Q.get_job, (approval_id,))
        return job_from_row(row) if row else None

    async def list_jobs(
        self, status: JobStatus | None = None, limit: int = 100, *, agent: str | None = None
    ) -> list[ResumeJob]:
        rows = await self._rows(Q.list_jobs, (status.value if status else None, limit, agent))
        return [job_from_row(r) for r in rows]

    async def count_jobs_by_status(self) -> dict[str, int]:
        return {r[0]: r[1] for r in await self._rows(Q.count_jobs_by_status)}

    async def requeue_job(self, approval_id: str, now: datetime, events: Sequence[NewEvent]) -> bool:
        return await self._changed(Q.requeue_job, (to_ts(now), approval_id), events)

    # ---------------------------------------------------------------- journal
    async def get_steps(self, run_id: str, *, namespace: str) -> list[StepRecord]:
        return [step_from_row(r) for r in await self._rows(Q.get_steps, (run_id, namespace))]

    async def record_step(self, step: StepRecord, *, namespace: str) -> StepRecord:
        values = (
            step.run_id,
            step.name,
            step.status.value,
            None if step.output is None else dumps(step.output),
            step.attempts,
            to_ts(step.started_at),
            to_ts(step.finished_at),
            step.error,
            namespace,
        )

        def op(conn: sqlite3.Connection) -> StepRecord:
            conn.execute(Q.record_step, values)
            return step_from_row(conn.execute(Q.get_step, (step.run_id, namespace, step.name)).fetchone())

        return await self._write(op)

    async def run_namespaces(self, run_id: str) -> list[str]:
        return [str(r[0]) for r in await self._rows(Q.run_namespaces, (run_id,))]

    async def list_runs(self, limit: int = 100) -> list[dict[str, Any]]:
        return [dict(r) for r in await self._rows(Q.list_runs, (limit,))]

    async def step_stats(self, limit: int = 100) -> list[dict[str, Any]]:
        return [dict(r) for r in await self._rows(Q.step_stats, (limit,))]

    # ---------------------------------------------------------------- inbound de-duplication
    async def remember_inbound(self, key: str, now: datetime) -> bool:
        return await self._changed(Q.remember_inbound, (key, to_ts(now)))

    async def prune(self, now: datetime, inbound_before: datetime, limit: int) -> int:
        def op(conn: sqlite3.Connection) -> int:
            marks = conn.execute(Q.prune_inbound, (to_ts(inbound_before), limit)).rowcount
            prompts = conn.execute(Q.prune_prompts, (to_ts(now),)).rowcount
            return marks + prompts + conn.execute(Q.prune_sessions, (to_ts(now),)).rowcount

        return await self._write(op)

    # ---------------------------------------------------------------- web sessions (migration v11)
    async def create_session(self, session_id: str, user: str, now: datetime, expires_at: datetime) -> None:
        await self._write(lambda c: c.execute(Q.create_session, (session_id, user, to_ts(now), to_ts(expires_at))))

    async def session_user(self, session_id: str, now: datetime) -> str | None:
        row = await self._row(Q.session_user, (session_id, to_ts(now)))
        return None if row is None else str(row[0])

    async def delete_session(self, session_id: str) -> bool:
        return await self._changed(Q.delete_session, (session_id,))

    async def delete_sessions(self, keep_users: Collection[str]) -> int:
        def op(conn: sqlite3.Connection) -> int:
            gone = [u for (u,) in conn.execute(Q.session_users).fetchall() if u not in keep_users]
            return sum(conn.execute(Q.delete_user_sessions, (u,)).rowcount for u in gone)

        return await self._write(op)

    # ---------------------------------------------------------------- prompts (migration v2)
    async def save_prompt(self, prompt: Prompt) -> None:
        p = prompt
        values = (p.key, p.approval_id, p.actor, p.purpose, to_ts(p.created_at), to_ts(p.expires_at))
        await self._write(lambda c: c.execute(Q.save_prompt, values))

    async def take_prompt(self, key: str, actor: str, now: datetime) -> Prompt | None:
        def op(conn: sqlite3.Connection) -> Prompt | None:
            conn.execute(Q.prune_prompts, (to_ts(now),))
            row = conn.execute(Q.find_prompt, (key, actor)).fetchone()
            if row is None:
                return None
            conn.execute(Q.delete_prompt, (key,))
            created, expires = from_ts(row["created_at"]), from_ts(row["expires_at"])
            assert created is not None and expires is not None
            return Prompt(row["key"], row["approval_id"], row["actor"], row["purpose"], created, expires)

        return await self._write(op)
