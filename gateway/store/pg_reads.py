"""PostgreSQL store, part one: connection plumbing and the read-only queries.

`PostgresStore` (gateway/store/postgres.py) adds the writes. Reads need no transaction of their
own: each is one statement, which sees one consistent snapshot under READ COMMITTED.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import asyncpg

from gateway.core.clock import from_ts, to_ts
from gateway.core.errors import StoreUnavailable
from gateway.core.models import Approval, Card, Event, JobStatus, OutboxItem, ResumeJob, Status, StepRecord
from gateway.store.queries import (
    ATTENTION_CARDS_SQL,
    JOBS_OF_AGENT,
    RUN_OWNER_SQL,
    SESSION_USER_SQL,
    STEP_STATS_SQL,
    approvals_sql,
)
from gateway.store.rows import (
    approval_from_row,
    card_from_row,
    event_from_row,
    job_from_row,
    outbox_from_row,
    step_from_row,
)

CONNECT_ERRORS = (OSError, asyncpg.PostgresConnectionError, asyncpg.InterfaceError, TimeoutError)
# ...and what a call on a connection the server has just dropped raises (admin shutdown, restart).
LOST_ERRORS = (*CONNECT_ERRORS, asyncpg.OperatorInterventionError, asyncpg.InternalClientError)


def _approvals_sql(
    status: Status | None, run_id: str | None, channel: str | None = None, agent: str | None = None
) -> tuple[str, list[Any], itertools.count[int]]:
    """The shared filters with `$n` marks; returns the counter for the caller's further marks."""
    n = itertools.count(1)
    sql, params = approvals_sql(status, run_id, channel, lambda: f"${next(n)}", agent=agent)
    return sql, params, n


class PgReads:
    """Connection plumbing shared with the writes, and every read-only Store method."""

    _pool: asyncpg.Pool | None

    @asynccontextmanager
    async def _conn(self) -> AsyncIterator[asyncpg.Connection]:
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
    async def _tx(self) -> AsyncIterator[asyncpg.Connection]:
        async with self._conn() as conn, conn.transaction():
            yield conn

    async def _fetch(self, sql: str, *args: Any) -> list[Any]:
        async with self._conn() as conn:
            rows: list[Any] = await conn.fetch(sql, *args)
            return rows

    async def _fetchrow(self, sql: str, *args: Any) -> Any:
        async with self._conn() as conn:
            return await conn.fetchrow(sql, *args)

    async def get_approval(self, approval_id: str) -> Approval | None:
        row = await self._fetchrow("SELECT * FROM approvals WHERE id = $1", approval_id)
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
        sql, params, n = _approvals_sql(status, run_id, agent=agent)
        sql += f" ORDER BY created_at DESC, id LIMIT ${next(n)} OFFSET ${next(n)}"
        return [approval_from_row(r) for r in await self._fetch(sql, *params, limit, offset)]

    async def due_approvals(self, now: datetime, limit: int) -> list[Approval]:
        sql = "SELECT * FROM approvals WHERE wake_at IS NOT NULL AND wake_at <= $1 ORDER BY wake_at LIMIT $2"
        return [approval_from_row(r) for r in await self._fetch(sql, to_ts(now), limit)]

    async def next_wake_at(self) -> datetime | None:
        row = await self._fetchrow("SELECT MIN(wake_at) AS m FROM approvals WHERE wake_at IS NOT NULL")
        return from_ts(row["m"])

    async def count_by_status(self) -> dict[str, int]:
        rows = await self._fetch("SELECT status, COUNT(*) AS n FROM approvals GROUP BY status")
        return {r["status"]: int(r["n"]) for r in rows}

    async def list_events(self, approval_id: str) -> list[Event]:
        rows = await self._fetch("SELECT * FROM events WHERE approval_id = $1 ORDER BY id", approval_id)
        return [event_from_row(r) for r in rows]

    async def last_event_id(self) -> int:
        row = await self._fetchrow("SELECT MAX(id) AS m FROM events")
        return int(row["m"] or 0)

    async def list_outbox(self, approval_id: str) -> list[OutboxItem]:
        rows = await self._fetch("SELECT * FROM outbox WHERE approval_id = $1 ORDER BY id", approval_id)
        return [outbox_from_row(r) for r in rows]

    async def get_card(self, approval_id: str, channel: str) -> Card | None:
        row = await self._fetchrow("SELECT * FROM cards WHERE approval_id = $1 AND channel = $2", approval_id, channel)
        return card_from_row(row) if row else None

    async def list_cards(self, approval_id: str) -> list[Card]:
        rows = await self._fetch("SELECT * FROM cards WHERE approval_id = $1 ORDER BY channel", approval_id)
        return [card_from_row(r) for r in rows]

    async def cards_needing_attention(self, limit: int = 50) -> list[Card]:
        return [card_from_row(r) for r in await self._fetch(ATTENTION_CARDS_SQL, limit)]

    async def get_job(self, approval_id: str) -> ResumeJob | None:
        row = await self._fetchrow("SELECT * FROM resume_jobs WHERE approval_id = $1", approval_id)
        return job_from_row(row) if row else None

    async def list_jobs(
        self, status: JobStatus | None = None, limit: int = 100, *, agent: str | None = None
    ) -> list[ResumeJob]:
        mine = JOBS_OF_AGENT.format(mark="$3")
        sql = (
            "SELECT * FROM resume_jobs WHERE ($1::text IS NULL OR status = $1)"
            f" AND ($3::text IS NULL OR {mine}) ORDER BY id DESC LIMIT $2"
        )
        return [job_from_row(r) for r in await self._fetch(sql, status.value if status else None, limit, agent)]

    async def run_owner(self, run_id: str) -> str | None:
        row = await self._fetchrow(RUN_OWNER_SQL, run_id)
        return None if row is None else str(row["owner"])

    async def session_user(self, session_id: str, now: datetime) -> str | None:
        row = await self._fetchrow(SESSION_USER_SQL, session_id, to_ts(now))
        return None if row is None else str(row["user_name"])

    async def get_steps(self, run_id: str) -> list[StepRecord]:
        rows = await self._fetch("SELECT * FROM journal WHERE run_id = $1 ORDER BY started_at, name", run_id)
        return [step_from_row(r) for r in rows]

    async def list_runs(self, limit: int = 100) -> list[dict[str, Any]]:
        sql = (
            "SELECT run_id, COUNT(*) AS steps, SUM(attempts) AS attempts, MIN(started_at) AS started_at,"
            " MAX(finished_at) AS last_at FROM journal GROUP BY run_id ORDER BY last_at DESC LIMIT $1"
        )
        rows = await self._fetch(sql, limit)
        return [{**dict(r), "steps": int(r["steps"]), "attempts": int(r["attempts"])} for r in rows]

    async def list_approvals_by_age(
        self,
        *,
        status: Status | None = None,
        run_id: str | None = None,
        channel: str | None = None,
        limit: int = 100,
    ) -> list[Approval]:
        sql, params, n = _approvals_sql(status, run_id, channel)
        rows = await self._fetch(f"{sql} ORDER BY created_at, id LIMIT ${next(n)}", *params, limit)
        return [approval_from_row(r) for r in rows]

    async def count_jobs_by_status(self) -> dict[str, int]:
        rows = await self._fetch("SELECT status, COUNT(*) AS n FROM resume_jobs GROUP BY status")
        return {r["status"]: int(r["n"]) for r in rows}

    async def step_stats(self, limit: int = 100) -> list[dict[str, Any]]:
        return [dict(r) for r in await self._fetch(STEP_STATS_SQL, limit)]
