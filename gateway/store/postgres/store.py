"""The PostgreSQL store: every use case is one transaction on a pooled connection (pool.py),
its SQL by name from gateway/store/sql/ (queries.sql, and postgres.sql for what differs).

Correctness across replicas comes from the database, never from a leader:
- `save_transition` is a compare-and-set on `version` (a concurrent UPDATE waits for the row
  lock, then re-checks the version and touches nothing);
- claims use `FOR UPDATE SKIP LOCKED` plus a lease, so each due row goes to one replica; a
  replica proved gone (liveness.py: its advisory lock is free and its heartbeat stale) has its
  claims released by another within about two seconds, and a stopping one hands its own back;
- after committing deliveries, jobs or deadlines, the store NOTIFYs (notify.py: why not inside
  the transaction) and other replicas' loops wake (`subscribe`); polling stays as the fallback.
Reads are one statement each: one consistent snapshot under READ COMMITTED.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from datetime import datetime, timedelta
from typing import Any

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
from gateway.store.postgres.audit import PostgresAudit
from gateway.store.postgres.handover import Handover
from gateway.store.postgres.liveness import Liveness
from gateway.store.postgres.migrate import migrate, schema_version
from gateway.store.postgres.notify import Listener, Notifier, Notify
from gateway.store.postgres.pool import Pool, affected
from gateway.store.postgres.writes import insert_events, insert_jobs, insert_outbox, upsert_card
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

__all__ = ["PostgresStore"]

Q = queries("postgres")


class PostgresStore(PostgresAudit, Handover):
    dialect = "postgres"

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 10) -> None:
        self.url = url
        self._db = Pool(url, min_size=min_size, max_size=max_size)
        self._listener = Listener(url)
        self._notifier = Notifier(url)
        self._liveness = Liveness(url)

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

    async def schema_version(self) -> int:
        async with self._db.conn() as conn:
            return await schema_version(conn)

    async def subscribe(self, callback: Notify) -> None:
        """Call `callback(topic, payload)` when any replica commits work: topic `outbox`,
        `jobs`, or `wake` (payload: the epoch seconds of the new wake-up time)."""
        self._listener.callbacks.append(callback)
        await self._listener.revive()  # if LISTEN cannot start, polling still works

    async def _changed(self, sql: str, *args: Any, events: Sequence[NewEvent] = ()) -> bool:
        """One-row UPDATE (or INSERT) in a transaction; the events only if it changed a row."""
        async with self._db.tx() as conn:
            if affected(await conn.execute(sql, *args)) != 1:
                return False
            await insert_events(conn, events)
        return True

    async def _claim(self, sql: str, now: datetime, owner: str, lease: timedelta, limit: int) -> list[Any]:
        """Lease due rows with one `... FOR UPDATE SKIP LOCKED` statement ($1 now, $2 limit,
        $3 owner, $4 lease end): concurrent replicas skip each other's rows instead of waiting."""
        async with self._db.tx() as conn:
            rows: list[Any] = await conn.fetch(sql, to_ts(now), limit, owner, to_ts(now + lease))
            return rows

    # ---------------------------------------------------------------- approvals
    async def create_approval(
        self, approval: Approval, events: Sequence[NewEvent], outbox: Sequence[NewOutbox]
    ) -> tuple[Approval, bool]:
        namespace = approval.namespace
        values = (*approval_values(approval), namespace)
        async with self._db.tx() as conn:
            # A concurrent insert of the same key (in the same namespace) waits here, then finds
            # the winner's row.
            if affected(await conn.execute(Q.insert_approval, *values)) == 0:
                row = await conn.fetchrow(Q.approval_by_key, namespace, approval.idempotency_key)
                return approval_from_row(row), False
            await insert_events(conn, events, fresh=all(e.approval_id == approval.id for e in events))
            await insert_outbox(conn, outbox, time.time())
        self._notifier.committed(outbox=bool(outbox), wake_at=to_ts(approval.wake_at))
        return approval, True

    async def get_approval(self, approval_id: str) -> Approval | None:
        row = await self._db.fetchrow(Q.get_approval, approval_id)
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
        sql, params = approvals_sql("postgres", status, run_id, None, "newest", offset=True, agent=agent)
        return [approval_from_row(r) for r in await self._db.fetch(sql, *params, limit, offset)]

    async def list_approvals_by_age(
        self,
        *,
        status: Status | None = None,
        run_id: str | None = None,
        channel: str | None = None,
        limit: int = 100,
    ) -> list[Approval]:
        sql, params = approvals_sql("postgres", status, run_id, channel, "oldest")
        return [approval_from_row(r) for r in await self._db.fetch(sql, *params, limit)]

    async def save_transition(
        self,
        approval: Approval,
        expected_version: int,
        events: Sequence[NewEvent],
        outbox: Sequence[NewOutbox] = (),
        job: NewJob | None = None,
    ) -> bool:
        values = approval_values(approval)
        async with self._db.tx() as conn:
            if affected(await conn.execute(Q.save_transition, *values[1:], approval.id, expected_version)) != 1:
                return False
            now = time.time()
            await insert_events(conn, events)
            await insert_outbox(conn, outbox, now)
            await insert_jobs(conn, [job] if job is not None else [], now)
        self._notifier.committed(outbox=bool(outbox), jobs=job is not None, wake_at=to_ts(approval.wake_at))
        return True

    async def save_policy_transitions(self, writes: Sequence[TransitionWrite]) -> list[bool]:
        """The scheduler's batch: one transaction, each row its own CAS on version; only the
        winners write their events, deliveries and jobs."""
        if not writes:
            return []
        rows = [(*policy_values(w.approval), w.approval.id, w.expected_version) for w in writes]
        async with self._db.tx() as conn:
            if len({w.approval.id for w in writes}) == len(writes):  # one statement, one round trip
                columns = map(list, zip(*rows, strict=True))
                matched = {r[0] for r in await conn.fetch(Q.save_policy_transitions, *columns)}
                won = [w.approval.id in matched for w in writes]
            else:  # the same approval twice: in order, so that only its first CAS can match
                won = [affected(await conn.execute(Q.save_policy_transition, *row)) == 1 for row in rows]
            done = [w for w, ok in zip(writes, won, strict=True) if ok]
            now = time.time()
            await insert_events(conn, [e for w in done for e in w.events])
            outbox = [o for w in done for o in w.outbox]
            await insert_outbox(conn, outbox, now)
            await insert_jobs(conn, [w.job for w in done if w.job is not None], now)
        wake = min((w.approval.wake_at for w in done if w.approval.wake_at), default=None)
        self._notifier.committed(outbox=bool(outbox), jobs=any(w.job for w in done), wake_at=to_ts(wake))
        return won

    async def due_approvals(self, now: datetime, limit: int) -> list[Approval]:
        return [approval_from_row(r) for r in await self._db.fetch(Q.due_approvals, to_ts(now), limit)]

    async def claim_due(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[Approval]:
        rows = await self._claim(Q.claim_due, now, owner, lease, limit)
        return sorted((approval_from_row(r) for r in rows), key=lambda a: (a.wake_at, a.id))

    async def next_wake_at(self) -> datetime | None:
        return from_ts((await self._db.fetchrow(Q.next_wake_at))["m"])

    async def count_by_status(self) -> dict[str, int]:
        return {r["status"]: int(r["n"]) for r in await self._db.fetch(Q.count_by_status)}

    # ---------------------------------------------------------------- events
    async def append_events(self, events: Sequence[NewEvent]) -> None:
        async with self._db.tx() as conn:
            await insert_events(conn, events)

    async def list_events(self, approval_id: str) -> list[Event]:
        return [event_from_row(r) for r in await self._db.fetch(Q.list_events, approval_id)]

    async def last_event_id(self) -> int:
        return int((await self._db.fetchrow(Q.last_event_id))["m"])

    # ---------------------------------------------------------------- outbox and cards
    async def claim_outbox(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[OutboxItem]:
        await self._listener.revive()  # the outbox loop polls here: a good place to re-LISTEN
        rows = await self._claim(Q.claim_outbox, now, owner, lease, limit)
        return sorted((outbox_from_row(r) for r in rows), key=lambda i: i.id)

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
        async with self._db.tx() as conn:
            approval_id = await conn.fetchval(Q.finish_outbox, *values)
            if approval_id is None:
                return False
            if card is not None:
                await upsert_card(conn, approval_id, card, t)
            await insert_events(conn, events)
        return True

    async def enqueue_outbox(self, items: Sequence[NewOutbox], now: datetime) -> None:
        async with self._db.tx() as conn:
            await insert_outbox(conn, items, to_ts(now) or time.time())
        self._notifier.committed(outbox=bool(items))

    async def list_outbox(self, approval_id: str) -> list[OutboxItem]:
        return [outbox_from_row(r) for r in await self._db.fetch(Q.list_outbox, approval_id)]

    async def get_card(self, approval_id: str, channel: str) -> Card | None:
        row = await self._db.fetchrow(Q.get_card, approval_id, channel)
        return card_from_row(row) if row else None

    async def list_cards(self, approval_id: str) -> list[Card]:
        return [card_from_row(r) for r in await self._db.fetch(Q.list_cards, approval_id)]

    async def cards_needing_attention(self, limit: int = 50) -> list[Card]:
        return [card_from_row(r) for r in await self._db.fetch(Q.cards_needing_attention, limit)]

    async def requeue_post(self, approval_id: str, channel: str, now: datetime, events: Sequence[NewEvent]) -> bool:
        if not await self._changed(Q.requeue_post, to_ts(now), approval_id, channel, events=events):
            return False
        self._notifier.committed(outbox=True)
        return True

    async def adopt_card(
        self, approval_id: str, channel: str, ref: str, now: datetime, events: Sequence[NewEvent] = ()
    ) -> bool:
        t = to_ts(now)
        return await self._changed(Q.adopt_card, approval_id, channel, ref, t, t, events=events)

    async def move_card(
        self, approval_id: str, channel: str, old_ref: str, new_ref: str, now: datetime, events: Sequence[NewEvent] = ()
    ) -> bool:
        return await self._changed(Q.move_card, new_ref, to_ts(now), approval_id, channel, old_ref, events=events)

    # ---------------------------------------------------------------- resume jobs
    async def claim_jobs(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[ResumeJob]:
        rows = await self._claim(Q.claim_jobs, now, owner, lease, limit)
        return sorted((job_from_row(r) for r in rows), key=lambda j: j.id)

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
        if not await self._changed(Q.finish_job, *values, events=events):
            return False
        self._notifier.committed(jobs=status is JobStatus.QUEUED)
        return True

    async def extend_job_lease(self, job_id: int, owner: str, until: datetime) -> bool:
        return await self._changed(Q.extend_job_lease, to_ts(until), job_id, owner)

    async def get_job(self, approval_id: str) -> ResumeJob | None:
        row = await self._db.fetchrow(Q.get_job, approval_id)
        return job_from_row(row) if row else None

    async def list_jobs(
        self, status: JobStatus | None = None, limit: int = 100, *, agent: str | None = None
    ) -> list[ResumeJob]:
        rows = await self._db.fetch(Q.list_jobs, status.value if status else None, limit, agent)
        return [job_from_row(r) for r in rows]

    async def count_jobs_by_status(self) -> dict[str, int]:
        return {r["status"]: int(r["n"]) for r in await self._db.fetch(Q.count_jobs_by_status)}

    async def requeue_job(self, approval_id: str, now: datetime, events: Sequence[NewEvent]) -> bool:
        if not await self._changed(Q.requeue_job, to_ts(now), approval_id, events=events):
            return False
        self._notifier.committed(jobs=True)
        return True

    # ---------------------------------------------------------------- journal
    async def get_steps(self, run_id: str, *, namespace: str) -> list[StepRecord]:
        return [step_from_row(r) for r in await self._db.fetch(Q.get_steps, run_id, namespace)]

    async def record_step(self, step: StepRecord, *, namespace: str) -> StepRecord:
        output = None if step.output is None else dumps(step.output)
        values = (step.run_id, step.name, step.status.value, output, step.attempts)
        times = (to_ts(step.started_at), to_ts(step.finished_at))
        async with self._db.tx() as conn:
            row = await conn.fetchrow(Q.record_step, *values, *times, step.error, namespace)
            if row is None:  # the stored record had succeeded: it wins
                row = await conn.fetchrow(Q.get_step, step.run_id, namespace, step.name)
        return step_from_row(row)

    async def run_namespaces(self, run_id: str) -> list[str]:
        return [str(r["namespace"]) for r in await self._db.fetch(Q.run_namespaces, run_id)]

    async def list_runs(self, limit: int = 100) -> list[dict[str, Any]]:
        rows = await self._db.fetch(Q.list_runs, limit)
        return [{**dict(r), "steps": int(r["steps"]), "attempts": int(r["attempts"])} for r in rows]

    async def step_stats(self, limit: int = 100) -> list[dict[str, Any]]:
        return [dict(r) for r in await self._db.fetch(Q.step_stats, limit)]

    # ---------------------------------------------------------------- inbound de-duplication
    async def remember_inbound(self, key: str, now: datetime) -> bool:
        return await self._changed(Q.remember_inbound, key, to_ts(now))

    async def prune(self, now: datetime, inbound_before: datetime, limit: int) -> int:
        async with self._db.tx() as conn:
            marks = await conn.execute(Q.prune_inbound, to_ts(inbound_before), limit)
            prompts = await conn.execute(Q.prune_prompts, to_ts(now))
            sessions = await conn.execute(Q.prune_sessions, to_ts(now))
        return affected(marks) + affected(prompts) + affected(sessions)

    # ---------------------------------------------------------------- web sessions (migration v11)
    async def create_session(self, session_id: str, user: str, now: datetime, expires_at: datetime) -> None:
        async with self._db.tx() as conn:
            await conn.execute(Q.create_session, session_id, user, to_ts(now), to_ts(expires_at))

    async def session_user(self, session_id: str, now: datetime) -> str | None:
        row = await self._db.fetchrow(Q.session_user, session_id, to_ts(now))
        return None if row is None else str(row["user_name"])

    async def delete_session(self, session_id: str) -> bool:
        return await self._changed(Q.delete_session, session_id)

    async def delete_sessions(self, keep_users: Collection[str]) -> int:
        async with self._db.tx() as conn:
            gone = [r["user_name"] for r in await conn.fetch(Q.session_users) if r["user_name"] not in keep_users]
            return sum([affected(await conn.execute(Q.delete_user_sessions, u)) for u in gone])

    # ---------------------------------------------------------------- prompts (migration v2)
    async def save_prompt(self, prompt: Prompt) -> None:
        p = prompt
        async with self._db.tx() as conn:
            await conn.execute(
                Q.save_prompt, p.key, p.approval_id, p.actor, p.purpose, to_ts(p.created_at), to_ts(p.expires_at)
            )

    async def take_prompt(self, key: str, actor: str, now: datetime) -> Prompt | None:
        async with self._db.tx() as conn:
            await conn.execute(Q.prune_prompts, to_ts(now))
            row = await conn.fetchrow(Q.take_prompt, key, actor)
        if row is None:
            return None
        created, expires = from_ts(row["created_at"]), from_ts(row["expires_at"])
        assert created is not None and expires is not None
        return Prompt(row["key"], row["approval_id"], row["actor"], row["purpose"], created, expires)
