"""PostgreSQL store on asyncpg, for several gateway replicas on one database.

Every method is one transaction on a pooled connection (READ COMMITTED). Correctness across
replicas comes from the database, never from a leader:
- `save_transition` is a compare-and-set on `version` (a concurrent UPDATE waits for the row
  lock, then re-checks the version and touches nothing);
- claims use `FOR UPDATE SKIP LOCKED` plus a lease, so each due row goes to one replica, and a
  row held by a dead replica is taken again once its lease runs out;
- after committing deliveries, jobs or deadlines, the store NOTIFYs (see `pg_support.Notifier`
  for why not inside the transaction) and other replicas' loops wake (`subscribe`); polling
  stays as the fallback.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from datetime import datetime, timedelta
from typing import Any

import asyncpg

from gateway.core.clock import from_ts, to_ts
from gateway.core.errors import RunNotFound, StoreUnavailable
from gateway.core.models import (
    Approval,
    DeliveryStatus,
    JobStatus,
    NewEvent,
    NewOutbox,
    OutboxItem,
    ResumeJob,
    StepRecord,
)
from gateway.store import pg_support as pg
from gateway.store.base import CardUpdate, NewJob, Prompt, TransitionWrite
from gateway.store.pg_reads import CONNECT_ERRORS, PgReads
from gateway.store.queries import (
    ADOPT_CARD_SQL,
    CLAIM_RUN_SQL,
    CREATE_SESSION_SQL,
    DELETE_SESSION_SQL,
    DELETE_USER_SESSIONS_SQL,
    PRUNE_SESSIONS_SQL,
    REQUEUE_POST_SQL,
    RUN_OWNER_SQL,
    SESSION_USERS_SQL,
    claims_run,
)
from gateway.store.rows import (
    approval_from_row,
    approval_values,
    dumps,
    job_from_row,
    outbox_from_row,
    policy_values,
    step_from_row,
)


class PostgresStore(PgReads):
    dialect = "postgres"

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 10) -> None:
        self.url = url
        self._min, self._max = min_size, max_size
        self._pool: asyncpg.Pool | None = None
        self._listener = pg.Listener(url)
        self._notifier = pg.Notifier(url)

    # ---------------------------------------------------------------- lifecycle
    async def open(self) -> None:
        try:
            self._pool = await asyncpg.create_pool(self.url, min_size=self._min, max_size=self._max)
        except (*CONNECT_ERRORS, asyncpg.PostgresError) as exc:  # refused, bad password, no such database
            raise StoreUnavailable(f"cannot connect to PostgreSQL: {type(exc).__name__}") from None
        try:
            async with self._pool.acquire() as conn:
                await pg.migrate(conn)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        await self._notifier.close()
        await self._listener.close()
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

    async def schema_version(self) -> int:
        async with self._conn() as conn:
            return await pg.schema_version(conn)

    async def subscribe(self, callback: pg.Notify) -> None:
        """Call `callback(topic, payload)` when any replica commits work: topic `outbox`,
        `jobs`, or `wake` (payload: the epoch seconds of the new wake-up time)."""
        self._listener.callbacks.append(callback)
        await self._listener.revive()  # if LISTEN cannot start, polling still works

    # ---------------------------------------------------------------- plumbing (reads: pg_reads.py)
    def _committed(self, *, outbox: bool = False, jobs: bool = False, wake_at: datetime | None = None) -> None:
        """Wake the other replicas' loops for what was just committed."""
        if outbox:
            self._notifier.send("hitl_outbox")
        if jobs:
            self._notifier.send("hitl_jobs")
        if wake_at is not None:
            self._notifier.send("hitl_wake", repr(to_ts(wake_at)))

    async def _claim(self, sql: str, now: datetime, owner: str, lease: timedelta, limit: int) -> list[Any]:
        """Lease due rows with one `... FOR UPDATE SKIP LOCKED` statement ($1 now, $2 limit,
        $3 owner, $4 lease end): concurrent replicas skip each other's rows instead of waiting."""
        async with self._tx() as conn:
            rows: list[Any] = await conn.fetch(sql, to_ts(now), limit, owner, to_ts(now + lease))
            return rows

    # ---------------------------------------------------------------- approvals
    async def create_approval(
        self, approval: Approval, events: Sequence[NewEvent], outbox: Sequence[NewOutbox]
    ) -> tuple[Approval, bool]:
        values = approval_values(approval)
        async with self._tx() as conn:
            if claims_run(approval.agent):  # a racing claim of the same run waits here, then yields
                claim = await conn.execute(CLAIM_RUN_SQL, approval.run_id, approval.agent, to_ts(approval.created_at))
                if pg.affected(claim) != 1 and await conn.fetchval(RUN_OWNER_SQL, approval.run_id) != approval.agent:
                    raise RunNotFound(approval.run_id, str(approval.agent))
            # A concurrent insert of the same key waits here, then finds the winner's row.
            if pg.affected(await conn.execute(pg.INSERT_APPROVAL, *values)) == 0:
                row = await conn.fetchrow(
                    "SELECT * FROM approvals WHERE idempotency_key = $1", approval.idempotency_key
                )
                return approval_from_row(row), False
            await pg.insert_events(conn, events)
            await pg.insert_outbox(conn, outbox, time.time())
        self._committed(outbox=bool(outbox), wake_at=approval.wake_at)
        return approval, True

    async def save_transition(
        self,
        approval: Approval,
        expected_version: int,
        events: Sequence[NewEvent],
        outbox: Sequence[NewOutbox] = (),
        job: NewJob | None = None,
    ) -> bool:
        values = approval_values(approval)
        async with self._tx() as conn:
            if pg.affected(await conn.execute(pg.UPDATE_APPROVAL, *values[1:], approval.id, expected_version)) != 1:
                return False
            now = time.time()
            await pg.insert_events(conn, events)
            await pg.insert_outbox(conn, outbox, now)
            await pg.insert_jobs(conn, [job] if job is not None else [], now)
        self._committed(outbox=bool(outbox), jobs=job is not None, wake_at=approval.wake_at)
        return True

    async def save_policy_transitions(self, writes: Sequence[TransitionWrite]) -> list[bool]:
        """The scheduler's batch: one transaction, each row its own CAS on version; only the
        winners write their events, deliveries and jobs."""
        if not writes:
            return []
        rows = [(*policy_values(w.approval), w.approval.id, w.expected_version) for w in writes]
        async with self._tx() as conn:
            if len({w.approval.id for w in writes}) == len(writes):  # one statement, one round trip
                matched = {r[0] for r in await conn.fetch(pg.UPDATE_POLICY_MANY, *map(list, zip(*rows, strict=True)))}
                won = [w.approval.id in matched for w in writes]
            else:  # the same approval twice: in order, so that only its first CAS can match
                won = [pg.affected(await conn.execute(pg.UPDATE_POLICY, *row)) == 1 for row in rows]
            done = [w for w, ok in zip(writes, won, strict=True) if ok]
            now = time.time()
            await pg.insert_events(conn, [e for w in done for e in w.events])
            outbox = [o for w in done for o in w.outbox]
            await pg.insert_outbox(conn, outbox, now)
            await pg.insert_jobs(conn, [w.job for w in done if w.job is not None], now)
        wake = min((w.approval.wake_at for w in done if w.approval.wake_at), default=None)
        self._committed(outbox=bool(outbox), jobs=any(w.job for w in done), wake_at=wake)
        return won

    async def claim_due(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[Approval]:
        rows = await self._claim(pg.CLAIM_DUE, now, owner, lease, limit)
        return sorted((approval_from_row(r) for r in rows), key=lambda a: (a.wake_at, a.id))

    # ---------------------------------------------------------------- events
    async def append_events(self, events: Sequence[NewEvent]) -> None:
        async with self._tx() as conn:
            await pg.insert_events(conn, events)

    # ---------------------------------------------------------------- outbox and cards
    async def claim_outbox(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[OutboxItem]:
        await self._listener.revive()  # the outbox loop polls here: a good place to re-LISTEN
        rows = await self._claim(pg.CLAIM_OUTBOX, now, owner, lease, limit)
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
        async with self._tx() as conn:
            approval_id = await conn.fetchval(
                "UPDATE outbox SET status = $1, attempts = attempts + $2,"
                " next_attempt_at = COALESCE($3, next_attempt_at), last_error = $4, lease_owner = NULL,"
                " lease_until = NULL, updated_at = $5 WHERE id = $6 AND lease_owner = $7 RETURNING approval_id",
                status.value,
                int(count_attempt),
                to_ts(next_attempt_at),
                error,
                t,
                item_id,
                owner,
            )
            if approval_id is None:
                return False
            if card is not None:
                await pg.upsert_card(conn, approval_id, card, t)
            await pg.insert_events(conn, events)
        return True

    async def enqueue_outbox(self, items: Sequence[NewOutbox], now: datetime) -> None:
        async with self._tx() as conn:
            await pg.insert_outbox(conn, items, to_ts(now) or time.time())
        self._committed(outbox=bool(items))

    async def requeue_post(self, approval_id: str, channel: str, now: datetime, events: Sequence[NewEvent]) -> bool:
        async with self._tx() as conn:
            done = await conn.execute(REQUEUE_POST_SQL, to_ts(now), approval_id, channel)
            if pg.affected(done) != 1:
                return False
            await pg.insert_events(conn, events)
        self._committed(outbox=True)
        return True

    async def adopt_card(
        self, approval_id: str, channel: str, ref: str, now: datetime, events: Sequence[NewEvent] = ()
    ) -> bool:
        async with self._tx() as conn:
            t = to_ts(now)
            done = await conn.fetchval(ADOPT_CARD_SQL + " RETURNING 1", approval_id, channel, ref, t, t)
            if done is None:
                return False
            await pg.insert_events(conn, events)
        return True

    # ---------------------------------------------------------------- resume jobs
    async def claim_jobs(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[ResumeJob]:
        rows = await self._claim(pg.CLAIM_JOBS, now, owner, lease, limit)
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
        async with self._tx() as conn:
            done = await conn.execute(
                "UPDATE resume_jobs SET status = $1, next_attempt_at = COALESCE($2, next_attempt_at),"
                " last_error = $3, output_tail = COALESCE($4, output_tail), claimed_by = NULL, lease_until = NULL,"
                " updated_at = $5 WHERE id = $6 AND claimed_by = $7 AND status = 'running'",
                status.value,
                to_ts(next_attempt_at),
                error,
                output_tail,
                to_ts(now),
                job_id,
                owner,
            )
            if pg.affected(done) != 1:
                return False
            await pg.insert_events(conn, events)
        self._committed(jobs=status is JobStatus.QUEUED)
        return True

    async def extend_job_lease(self, job_id: int, owner: str, until: datetime) -> bool:
        async with self._tx() as conn:
            done = await conn.execute(
                "UPDATE resume_jobs SET lease_until = $1 WHERE id = $2 AND claimed_by = $3 AND status = 'running'",
                to_ts(until),
                job_id,
                owner,
            )
        return pg.affected(done) == 1

    async def requeue_job(self, approval_id: str, now: datetime, events: Sequence[NewEvent]) -> bool:
        async with self._tx() as conn:
            done = await conn.execute(
                "UPDATE resume_jobs SET status = 'queued', attempts = 0, next_attempt_at = $1, updated_at = $1,"
                " last_error = NULL WHERE approval_id = $2 AND status = 'failed'",
                to_ts(now),
                approval_id,
            )
            if pg.affected(done) != 1:
                return False
            await pg.insert_events(conn, events)
        self._committed(jobs=True)
        return True

    # ---------------------------------------------------------------- journal
    async def record_step(self, step: StepRecord) -> StepRecord:
        async with self._tx() as conn:
            row = await conn.fetchrow(
                "INSERT INTO journal (run_id, name, status, output, attempts, started_at, finished_at, error)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (run_id, name) DO UPDATE SET"
                " status = excluded.status, output = excluded.output, attempts = excluded.attempts,"
                " started_at = excluded.started_at, finished_at = excluded.finished_at, error = excluded.error"
                " WHERE journal.status <> 'succeeded' RETURNING *",
                step.run_id,
                step.name,
                step.status.value,
                None if step.output is None else dumps(step.output),
                step.attempts,
                to_ts(step.started_at),
                to_ts(step.finished_at),
                step.error,
            )
            if row is None:  # the stored record had succeeded: it wins
                row = await conn.fetchrow(
                    "SELECT * FROM journal WHERE run_id = $1 AND name = $2", step.run_id, step.name
                )
        return step_from_row(row)

    # ---------------------------------------------------------------- inbound de-duplication
    async def remember_inbound(self, key: str, now: datetime) -> bool:
        async with self._tx() as conn:
            done = await conn.execute(
                "INSERT INTO inbound (key, at) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING", key, to_ts(now)
            )
        return pg.affected(done) == 1

    # ---------------------------------------------------------------- prompts (migration v2)
    async def save_prompt(self, prompt: Prompt) -> None:
        async with self._tx() as conn:
            await conn.execute(
                "INSERT INTO prompts (key, approval_id, actor, purpose, created_at, expires_at)"
                " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (key) DO UPDATE SET approval_id = excluded.approval_id,"
                " actor = excluded.actor, purpose = excluded.purpose, created_at = excluded.created_at,"
                " expires_at = excluded.expires_at",
                prompt.key,
                prompt.approval_id,
                prompt.actor,
                prompt.purpose,
                to_ts(prompt.created_at),
                to_ts(prompt.expires_at),
            )

    async def prune(self, now: datetime, inbound_before: datetime, limit: int) -> int:
        async with self._tx() as conn:
            marks = await conn.execute(
                "DELETE FROM inbound WHERE key IN (SELECT key FROM inbound WHERE at < $1 LIMIT $2)",
                to_ts(inbound_before),
                limit,
            )
            prompts = await conn.execute("DELETE FROM prompts WHERE expires_at <= $1", to_ts(now))
            sessions = await conn.execute(PRUNE_SESSIONS_SQL, to_ts(now))
        return pg.affected(marks) + pg.affected(prompts) + pg.affected(sessions)

    # ---------------------------------------------------------------- run owners (migration v11)
    async def claim_run(self, run_id: str, owner: str, now: datetime) -> str:
        async with self._tx() as conn:
            if pg.affected(await conn.execute(CLAIM_RUN_SQL, run_id, owner, to_ts(now))) == 1:  # a racing claim
                return owner  # waits for this one, then inserts nothing
            return str(await conn.fetchval(RUN_OWNER_SQL, run_id))

    # ---------------------------------------------------------------- web sessions (migration v11)
    async def create_session(self, session_id: str, user: str, now: datetime, expires_at: datetime) -> None:
        async with self._tx() as conn:
            await conn.execute(CREATE_SESSION_SQL, session_id, user, to_ts(now), to_ts(expires_at))

    async def delete_session(self, session_id: str) -> bool:
        async with self._tx() as conn:
            return pg.affected(await conn.execute(DELETE_SESSION_SQL, session_id)) == 1

    async def delete_sessions(self, keep_users: Collection[str]) -> int:
        async with self._tx() as conn:
            gone = [r["user_name"] for r in await conn.fetch(SESSION_USERS_SQL) if r["user_name"] not in keep_users]
            return sum([pg.affected(await conn.execute(DELETE_USER_SESSIONS_SQL, u)) for u in gone])

    async def take_prompt(self, key: str, actor: str, now: datetime) -> Prompt | None:
        async with self._tx() as conn:
            await conn.execute("DELETE FROM prompts WHERE expires_at <= $1", to_ts(now))
            # DELETE ... RETURNING: of two replicas taking the same prompt, one gets it.
            row = await conn.fetchrow("DELETE FROM prompts WHERE key = $1 AND actor = $2 RETURNING *", key, actor)
        if row is None:
            return None
        created, expires = from_ts(row["created_at"]), from_ts(row["expires_at"])
        assert created is not None and expires is not None
        return Prompt(row["key"], row["approval_id"], row["actor"], row["purpose"], created, expires)
