"""Events from before today's link: an approval whose events started before migration 13 (its
old events stay unchained and are reported as such, its new ones chain from seq 1), and events
linked in the form of schema versions 13 to 15."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gateway.core.audit import GENESIS, event_hash_v1, load_public_key
from gateway.core.models import NewEvent
from gateway.service.audit import AuditService, verify_lines
from gateway.store import open_store
from gateway.store.sqlite import migrate as sqlite_migrate
from gateway.testing import FakeClock
from tests.audit.offline import run_script, tampered, write
from tests.store.conftest import make_approval


def insert_approval(conn: sqlite3.Connection, approval_id: str) -> None:
    conn.execute(
        "INSERT INTO approvals (id, idempotency_key, run_id, step, title, summary, args, state, channels,"
        " approvers, policy, status, version, created_at, votes, args_hash) VALUES"
        " (?, 'k', 'r', 's', 't', '', '{}', 'null', '[]', '[]', '{}', 'waiting_approval', 1, 0, '[]', 'h')",
        (approval_id,),
    )


async def test_events_from_before_the_chain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    approval = make_approval()
    with monkeypatch.context() as m:  # a database at version 12
        m.setattr(sqlite_migrate, "MIGRATIONS", tuple(x for x in sqlite_migrate.MIGRATIONS if x.version < 13))
        old = open_store(url)
        await old.open()
        await old.close()
    conn = sqlite3.connect(tmp_path / "old.db")
    insert_approval(conn, approval.id)
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


@pytest.mark.subprocess
async def test_links_of_schema_versions_13_to_15_still_verify(tmp_path: Path) -> None:
    """Events hashed with `data` as the list's last string (schema 13 to 15) keep their hashes:
    new events extend their chain, and both verifiers (here and offline) accept either form,
    but still refuse a change to an old event."""
    url = f"sqlite:///{tmp_path / 'v15.db'}"
    approval = make_approval()
    store = open_store(url)
    await store.open()
    await store.close()
    conn = sqlite3.connect(tmp_path / "v15.db")
    insert_approval(conn, approval.id)
    prev = GENESIS
    for seq, (kind, data) in enumerate((("suspended", '{"run_id":"r"}'), ("card_posted", '{"ref":"x"}')), 1):
        prev = event_hash_v1(prev, seq, approval.id, kind, None, float(seq), "web", data)
        conn.execute(
            "INSERT INTO events (approval_id, kind, at, actor, channel, data, seq, hash)"
            " VALUES (?, ?, ?, NULL, 'web', ?, ?, ?)",
            (approval.id, kind, float(seq), data, seq, prev),
        )
    conn.commit()
    conn.close()
    store = open_store(url)
    await store.open()
    try:
        clock = FakeClock()
        await store.append_events([NewEvent(approval.id, "vote", clock.now(), "web:alice")])
        audit = AuditService(store, clock, "22" * 32)
        await audit.seal()
        verdict = await audit.verify()
        assert verdict.ok, verdict.problem
        events = await store.audit_events([approval.id])
        assert [e.seq for e in events] == [1, 2, 3]
        export = [line async for line in audit.export()]
    finally:
        await store.close()
    key = audit.public_key
    assert key is not None
    done = run_script(tmp_path, write(tmp_path, export), key)
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr
    assert verify_lines(export, load_public_key(key)).ok
    bad = tampered(export, kind="card_posted")  # an old-form event's actor
    done = run_script(tmp_path, write(tmp_path, bad), key)
    assert done.returncode == 1 and "seq 2" in done.stderr
    problem = verify_lines(bad, load_public_key(key)).problem
    assert problem is not None and problem.seq == 2
