"""An approval whose events started before migration 13: its old events stay unchained (and are
reported as such), its new ones chain from seq 1, and the trail verifies."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gateway.core.models import NewEvent
from gateway.service.audit import AuditService
from gateway.store import open_store
from gateway.store.sqlite import migrate as sqlite_migrate
from gateway.testing import FakeClock
from tests.store.conftest import make_approval


async def test_events_from_before_the_chain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    approval = make_approval()
    with monkeypatch.context() as m:  # a database at version 12
        m.setattr(sqlite_migrate, "MIGRATIONS", tuple(x for x in sqlite_migrate.MIGRATIONS if x.version < 13))
        old = open_store(url)
        await old.open()
        await old.close()
    conn = sqlite3.connect(tmp_path / "old.db")
    conn.execute(
        "INSERT INTO approvals (id, idempotency_key, run_id, step, title, summary, args, state, channels,"
        " approvers, policy, status, version, created_at, votes, args_hash) VALUES"
        " (?, 'k', 'r', 's', 't', '', '{}', 'null', '[]', '[]', '{}', 'waiting_approval', 1, 0, '[]', 'h')",
        (approval.id,),
    )
    conn.execute("INSERT INTO events (approval_id, kind, at, data) VALUES (?, 'suspended', 1.0, '{}')", (approval.id,))
    conn.commit()
    conn.close()
    store = open_store(url)  # migrates to 13
    await store.open()
    try:
        clock = FakeClock()
        await store.append_events([NewEvent(approval.id, "vote", clock.now(), "web:alice")])
        audit = AuditService(store, clock)
        await audit.seal()
        verdict = await audit.verify()
        assert verdict.ok, verdict.problem
        assert "1 events from before the chain" in verdict.summary and "1 unsigned" in verdict.summary
        events = await store.audit_events([approval.id])
        assert [(e.seq, e.hash is None) for e in events] == [(None, True), (1, False)]
    finally:
        await store.close()
