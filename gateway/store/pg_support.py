"""PostgreSQL plumbing kept apart from the use cases: migrations under an advisory lock,
LISTEN/NOTIFY wake-ups, and the row-writing helpers shared by several store methods.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import asyncpg

from gateway.core.clock import to_ts
from gateway.core.models import DeliveryStatus, NewEvent, NewOutbox
from gateway.store.base import CardUpdate, NewJob
from gateway.store.migrations import MIGRATIONS
from gateway.store.rows import APPROVAL_COLUMNS, POLICY_COLUMNS, dumps

log = logging.getLogger("gateway.store.postgres")

# One advisory lock key for "someone is migrating this database" (any 64-bit constant).
MIGRATION_LOCK = 0x6869746C_6D696772  # "hitlmigr"
# NOTIFY channels -> the topic handed to subscribers.
TOPICS = {"hitl_outbox": "outbox", "hitl_jobs": "jobs", "hitl_wake": "wake"}
Notify = Callable[[str, str], None]


_COLS = ", ".join(APPROVAL_COLUMNS)
INSERT_APPROVAL = (
    f"INSERT INTO approvals ({_COLS}) VALUES ({', '.join(f'${i + 1}' for i in range(len(APPROVAL_COLUMNS)))})"
    " ON CONFLICT (idempotency_key) DO NOTHING"
)
_N = len(APPROVAL_COLUMNS)
UPDATE_APPROVAL = (
    "UPDATE approvals SET "
    + ", ".join(f"{c} = ${i}" for i, c in enumerate(APPROVAL_COLUMNS[1:], start=1))
    + f", wake_owner = NULL, wake_lease_until = NULL WHERE id = ${_N} AND version = ${_N + 1}"
)
UPDATE_POLICY = (
    "UPDATE approvals SET "
    + ", ".join(f"{c} = ${i}" for i, c in enumerate(POLICY_COLUMNS, start=1))
    + f", wake_owner = NULL, wake_lease_until = NULL WHERE id = ${len(POLICY_COLUMNS) + 1}"
    + f" AND version = ${len(POLICY_COLUMNS) + 2}"
)
_POLICY_TYPES = {
    "status": "text",
    "version": "int",
    "deadline": "float8",
    "wake_at": "float8",
    "decision": "text",
    "escalations": "int",
    "reminders_sent": "int",
    "channels": "text",
}
# UPDATE_POLICY for a whole batch in one statement: one array per column (POLICY_COLUMNS, then
# the id and the expected version), one row each; RETURNING names the rows whose CAS matched.
UPDATE_POLICY_MANY = (
    "UPDATE approvals a SET "
    + ", ".join(f"{c} = v.{c}" for c in POLICY_COLUMNS)
    + ", wake_owner = NULL, wake_lease_until = NULL FROM unnest("
    + ", ".join(f"${i}::{_POLICY_TYPES[c]}[]" for i, c in enumerate(POLICY_COLUMNS, start=1))
    + f", ${len(POLICY_COLUMNS) + 1}::text[], ${len(POLICY_COLUMNS) + 2}::int[])"
    + f" AS v({', '.join(POLICY_COLUMNS)}, id, expected)"
    + " WHERE a.id = v.id AND a.version = v.expected RETURNING a.id"
)
CLAIM_DUE = """
WITH due AS (
    SELECT id FROM approvals
    WHERE wake_at IS NOT NULL AND wake_at <= $1 AND (wake_lease_until IS NULL OR wake_lease_until <= $1)
    -- wake_at alone: the index walk stops at the limit (`, id` would sort every tie: a storm)
    ORDER BY wake_at LIMIT $2
    FOR UPDATE SKIP LOCKED
)
UPDATE approvals a SET wake_owner = $3, wake_lease_until = $4 FROM due WHERE a.id = due.id RETURNING a.*
"""
CLAIM_OUTBOX = """
WITH due AS (
    SELECT id FROM outbox
    WHERE status = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
    -- one replica at a time per card, so that its post, syncs and reminders stay in order
    AND NOT EXISTS (SELECT 1 FROM outbox busy WHERE busy.approval_id = outbox.approval_id
                    AND busy.channel = outbox.channel AND busy.lease_until > $1)
    ORDER BY next_attempt_at, id LIMIT $2
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox o SET lease_owner = $3, lease_until = $4 FROM due WHERE o.id = due.id RETURNING o.*
"""
CLAIM_JOBS = """
WITH due AS (
    SELECT id FROM resume_jobs
    WHERE (status = 'queued' AND next_attempt_at <= $1) OR (status = 'running' AND lease_until <= $1)
    ORDER BY next_attempt_at, id LIMIT $2
    FOR UPDATE SKIP LOCKED
)
UPDATE resume_jobs j SET status = 'running', claimed_by = $3, lease_until = $4, attempts = j.attempts + 1,
    updated_at = $1
FROM due WHERE j.id = due.id RETURNING j.*
"""


def affected(status: str) -> int:
    """Rows touched, from a command tag such as 'UPDATE 1' or 'INSERT 0 1'."""
    return int(status.rsplit(" ", 1)[-1])


async def schema_version(conn: asyncpg.Connection) -> int:
    exists = await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL")
    if not exists:
        return 0
    return int(await conn.fetchval("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"))


async def migrate(conn: asyncpg.Connection) -> int:
    """Apply pending migrations in one transaction. The transaction-scoped advisory lock makes
    concurrent replicas queue here; the second one finds nothing left to do."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations"
            " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at DOUBLE PRECISION NOT NULL)"
        )
        # Every version not applied yet (a lower number can arrive after a higher one).
        applied = {r[0] for r in await conn.fetch("SELECT version FROM schema_migrations")}
        for m in MIGRATIONS:
            if m.version not in applied:
                await conn.execute(m.postgres)  # no arguments: a multi-statement script is allowed
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
                    m.version,
                    m.name,
                    time.time(),
                )
                log.info("applied migration %s (%s)", m.version, m.name)
    return await schema_version(conn)


async def insert_events(conn: asyncpg.Connection, events: Sequence[NewEvent]) -> None:
    if events:
        await conn.executemany(
            "INSERT INTO events (approval_id, kind, at, actor, channel, data) VALUES ($1, $2, $3, $4, $5, $6)",
            [(e.approval_id, e.kind, to_ts(e.at), e.actor, e.channel, dumps(e.data)) for e in events],
        )


_INSERT_OUTBOX = (
    "INSERT INTO outbox (approval_id, channel, kind, status, attempts, next_attempt_at, data, created_at, updated_at)"
    " SELECT $1::text, $2::text, $3::text, 'pending', 0, $4::float8, $5::text, $4::float8, $4::float8"
    # Coalesce: one pending, unclaimed sync per card is enough, it renders the latest state.
    " WHERE $3 <> 'sync' OR NOT EXISTS (SELECT 1 FROM outbox WHERE approval_id = $1 AND channel = $2"
    " AND kind = 'sync' AND status = 'pending' AND lease_owner IS NULL)"
    " ON CONFLICT DO NOTHING"
)

_INSERT_POSTED = (
    "INSERT INTO outbox (approval_id, channel, kind, status, attempts, next_attempt_at, data, created_at, updated_at)"
    " VALUES ($1, $2, 'post', 'done', 1, $3, $4, $3, $3)"
)


async def insert_outbox(conn: asyncpg.Connection, items: Sequence[NewOutbox], now: float) -> None:
    queued = [i for i in items if i.ref is None]
    if queued:
        await conn.executemany(
            _INSERT_OUTBOX,
            [(i.approval_id, i.channel, i.kind.value, now, dumps(i.data)) for i in queued],
        )
    for item in items:
        if item.ref is not None:  # posted in this commit: record it as the outbox would have
            await conn.execute(_INSERT_POSTED, item.approval_id, item.channel, now, dumps(item.data))
            posted = CardUpdate(item.channel, item.ref, DeliveryStatus.DONE)
            await upsert_card(conn, item.approval_id, posted, to_ts(item.posted_at) or now)


async def insert_jobs(conn: asyncpg.Connection, jobs: Sequence[NewJob], now: float) -> None:
    """Resume jobs of decided approvals (one per approval: a second is ignored)."""
    if jobs:
        await conn.executemany(
            "INSERT INTO resume_jobs (approval_id, worker, status, attempts, next_attempt_at, created_at,"
            " updated_at) VALUES ($1, $2, 'queued', 0, $3, $3, $3) ON CONFLICT (approval_id) DO NOTHING",
            [(job.approval_id, job.worker, now) for job in jobs],
        )


async def upsert_card(conn: asyncpg.Connection, approval_id: str, card: CardUpdate, now: float | None) -> None:
    channel = card.channel
    posted = now if card.status is DeliveryStatus.DONE else None
    await conn.execute(
        "INSERT INTO cards (approval_id, channel, ref, status, error, posted_at, updated_at)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (approval_id, channel) DO UPDATE SET"
        " ref = COALESCE(excluded.ref, cards.ref), status = excluded.status, error = excluded.error,"
        " updated_at = excluded.updated_at",
        approval_id,
        channel,
        card.ref,
        card.status.value,
        card.error,
        posted,
        now,
    )


class Listener:
    """One dedicated connection that LISTENs on the wake-up channels and calls back.

    A lost connection only costs latency: every loop still polls. It is re-opened on the next
    `revive()` (called from the outbox loop's claim)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.callbacks: list[Notify] = []
        self._conn: asyncpg.Connection | None = None

    def _on_notify(self, _conn: Any, _pid: int, channel: str, payload: str) -> None:
        topic = TOPICS.get(channel)
        if topic is None:
            return
        for fn in list(self.callbacks):
            try:
                fn(topic, payload)
            except Exception:  # a subscriber's bug must not kill the listener
                log.exception("wake-up subscriber failed")

    async def ensure(self) -> None:
        if not self.callbacks or (self._conn is not None and not self._conn.is_closed()):
            return
        conn = await asyncpg.connect(self.url)
        for channel in TOPICS:
            await conn.add_listener(channel, self._on_notify)
        self._conn = conn

    async def revive(self) -> None:
        """Re-open a lost LISTEN connection; failing quietly (polling still works)."""
        try:
            await self.ensure()
        except Exception as exc:
            log.warning("cannot LISTEN for wake-ups (%s); polling only", type(exc).__name__)

    async def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            if not conn.is_closed():
                await conn.close()


class Notifier:
    """Sends wake-up NOTIFYs after commits, coalesced, on one connection of its own.

    Not inside the writing transaction: PostgreSQL serialises the commits of every transaction
    that notifies (a global queue lock held through the commit's WAL flush), which cut
    concurrent suspend throughput by about 3x here (docs/postgres.md). After the commit, a
    notify-only transaction with `synchronous_commit = off` holds that lock for microseconds,
    and bursts of commits share one notify per channel. A wake-up is a hint: if this process
    dies between the commit and the notify, the other replicas' polling picks the work up."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._pending: dict[str, str] = {}
        self._task: asyncio.Task[None] | None = None
        self._conn: asyncpg.Connection | None = None

    def send(self, channel: str, payload: str = "") -> None:
        if channel == "hitl_wake" and channel in self._pending:  # the earliest wake-up matters
            payload = min(payload, self._pending[channel], key=float)
        self._pending[channel] = payload
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._flush(), name="pg-notify")

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, {}
            try:
                if self._conn is None or self._conn.is_closed():
                    self._conn = await asyncpg.connect(self.url, server_settings={"synchronous_commit": "off"})
                await self._conn.execute(
                    "SELECT pg_notify(c, p) FROM unnest($1::text[], $2::text[]) AS t(c, p)",
                    list(batch),
                    list(batch.values()),
                )
            except Exception as exc:  # polling still finds the work
                log.warning("wake-up NOTIFY failed (%s); other replicas will poll", type(exc).__name__)
                return

    async def close(self) -> None:
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 2)
            self._task = None
        if self._conn is not None:
            conn, self._conn = self._conn, None
            if not conn.is_closed():
                await conn.close()
