"""Audit tests: a runtime with a signing key on every backend, a few decided approvals, and raw
access to the database for the tamperer (who drops the append-only triggers first)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from gateway.config import Settings
from gateway.core.audit import GENESIS, event_hash
from gateway.core.models import Outcome
from gateway.runtime import Runtime
from gateway.service.approvals import SuspendRequest
from gateway.service.commands import Authority
from gateway.testing import FakeClock

SIGNING_KEY = "5d" * 32  # a test Ed25519 seed


@pytest.fixture
def db_url(store_url: str) -> str:
    return store_url


@pytest.fixture
def settings(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory(workers={"agent": {"command": ["true"]}}, audit={"signing_key": SIGNING_KEY})


async def decided(
    rt: Runtime, n: int, clock: FakeClock, *, code_version: str | None = None, run: str = "run"
) -> list[str]:
    """`n` approvals, each suspended, posted on the web, approved and resumed: 6+ events each."""
    ids = []
    for i in range(n):
        req = SuspendRequest(
            run_id=f"{run}-{i}",
            step="charge",
            title=f"Charge ACME {i} EUR",
            args={"amount": 490 + i},
            worker="agent",
            code_version=code_version,
        )
        approval, _ = await rt.service.suspend(req)
        ids.append(approval.id)
        clock.advance(1)
    for approval_id in ids:
        await rt.service.decide(approval_id, Outcome.APPROVE, "operator:alice", authority=Authority.OPERATOR)
        clock.advance(1)
    await rt.worker.drain()
    return ids


class Raw:
    """The database administrator: plain SQL on the same database, `$n` marks on both backends."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.sqlite = url.startswith("sqlite")

    async def run(self, sql: str, *args: Any) -> list[Any]:
        if self.sqlite:
            conn = sqlite3.connect(Path(self.url.removeprefix("sqlite:///")))
            try:
                rows = conn.execute(sql.replace("$", "?"), args).fetchall()
                conn.commit()
                return rows
            finally:
                conn.close()
        pg = await asyncpg.connect(self.url)
        try:
            return list(await pg.fetch(sql, *args))
        finally:
            await pg.close()

    async def drop_triggers(self) -> None:
        if self.sqlite:
            for t in ("events_append_only", "audit_checkpoints_append_only", "audit_leaves_append_only"):
                await self.run(f"DROP TRIGGER {t}_update")
                await self.run(f"DROP TRIGGER {t}_delete")
        else:
            for table in ("events", "audit_checkpoints", "audit_leaves"):
                await self.run(f"DROP TRIGGER {table}_append_only ON {table}")

    async def rechain(self, approval_id: str) -> str:
        """Recompute the approval's chain (and its head row) over its events as they now are,
        as a tamperer without the key can; its new head hash."""
        prev = GENESIS
        rows = await self.run(
            "SELECT id, seq, kind, at, actor, channel, data FROM events WHERE approval_id = $1 ORDER BY id", approval_id
        )
        for id_, seq, kind, at, actor, channel, data in rows:
            prev = event_hash(prev, seq, approval_id, kind, actor, at, channel, data)
            await self.run("UPDATE events SET hash = $1 WHERE id = $2", prev, id_)
        if not self.sqlite:
            await self.run("UPDATE audit_heads SET hash = $1 WHERE approval_id = $2", prev, approval_id)
        return prev


@pytest.fixture
def raw(db_url: str) -> Raw:
    return Raw(db_url)


@pytest.fixture
async def trail(runtime: Runtime, clock: FakeClock, raw: Raw) -> list[str]:
    """Three decided approvals, sealed and verified; then the tamperer drops the triggers."""
    ids = await decided(runtime, 3, clock)
    await runtime.audit.seal()
    verdict = await runtime.audit.verify()
    assert verdict.ok, verdict.problem
    assert "0 unsigned" not in verdict.summary and "unsigned" not in verdict.summary
    await raw.drop_triggers()
    return ids
