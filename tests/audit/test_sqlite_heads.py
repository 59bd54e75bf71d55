"""SQLite keeps no head rows (migration 15): a head is its approval's last event, a checkpoint
seals the approvals with events after its watermark, and the event ids have no holes, so that a
deletion no checkpoint has sealed yet (the newest events, a whole approval) is still caught."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.core.audit import GENESIS, event_hash
from gateway.core.models import NewEvent
from gateway.service.audit import AuditService
from gateway.store import open_store
from gateway.store.sqlite import SQLiteStore
from gateway.store.sqlite import migrate as sqlite_migrate
from gateway.store.sqlite.writes import encode_events, insert_events
from gateway.testing import FakeClock
from tests.store.conftest import make_approval


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    s = open_store(f"sqlite:///{tmp_path / 'gw.db'}")
    assert isinstance(s, SQLiteStore)
    await s.open()
    yield s
    await s.close()


async def _approvals(store: SQLiteStore, clock: FakeClock, n: int) -> list[str]:
    ids = []
    for _ in range(n):
        approval = make_approval()
        await store.create_approval(approval, [NewEvent(approval.id, "suspended", clock.now())], [])
        await store.append_events([NewEvent(approval.id, "vote", clock.now(), "web:alice")])
        ids.append(approval.id)
    return ids


def _raw(path: Path, sql: str, *args: object) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        conn.execute("DROP TRIGGER IF EXISTS events_append_only_delete")
        rows = conn.execute(sql, args).fetchall()
        conn.commit()
        return rows
    finally:
        conn.close()


async def test_chains_extend_from_the_last_event_and_seal_once(store: SQLiteStore) -> None:
    clock = FakeClock()
    audit = AuditService(store, clock)
    a, b = await _approvals(store, clock, 2)
    first = await audit.seal()
    assert sorted((lf.approval_id, lf.seq) for lf in first.leaves) == sorted([(a, 2), (b, 2)])
    await store.append_events([NewEvent(a, "vote", clock.now(), "web:alice")])
    second = await audit.seal()  # only what moved since the first
    assert [(lf.approval_id, lf.seq) for lf in second.leaves] == [(a, 3)]
    assert (await audit.seal()).leaves == ()
    events = await store.audit_events([a])
    assert [e.seq for e in events] == [1, 2, 3] and second.leaves[0].hash == events[-1].hash
    assert (await audit.verify()).ok


@pytest.mark.parametrize("which", ["an approval's last", "the newest", "a whole approval's"])
async def test_unsealed_deletions_leave_a_hole(store: SQLiteStore, tmp_path: Path, which: str) -> None:
    """No checkpoint has sealed these yet: the hole in the ids (or the counter above the highest
    id, for the newest) is what gives them away."""
    clock = FakeClock()
    audit = AuditService(store, clock)
    ids = await _approvals(store, clock, 3)
    assert (await audit.verify()).ok
    path = tmp_path / "gw.db"
    if which == "a whole approval's":
        gone = [r[0] for r in _raw(path, "SELECT id FROM events WHERE approval_id = ? ORDER BY id", ids[1])]
        _raw(path, "DELETE FROM events WHERE approval_id = ?", ids[1])
    else:
        victim = ids[0] if which == "an approval's last" else ids[2]
        gone = [r[0] for r in _raw(path, "SELECT MAX(id) FROM events WHERE approval_id = ?", victim)]
        _raw(path, "DELETE FROM events WHERE id = ?", gone[0])
    problem = (await audit.verify()).problem
    assert problem is not None and problem.found == "no such event"
    assert problem.expected == f"event id {gone[0]} (event ids have no holes)"
    assert str(problem) == f"expected event id {gone[0]} (event ids have no holes), found no such event"


async def test_rolled_back_writes_leave_no_hole(store: SQLiteStore) -> None:
    """A use case that raises after writing events, alone or in a group commit with others
    (the batch re-runs with a savepoint each): AUTOINCREMENT takes its ids back."""
    clock = FakeClock()
    audit = AuditService(store, clock)
    (a,) = await _approvals(store, clock, 1)

    def failing(conn: sqlite3.Connection) -> None:
        insert_events(conn, encode_events([NewEvent(a, "vote", clock.now(), "web:mallory")]))
        raise ValueError("refused after writing")

    with pytest.raises(ValueError):
        await store._engine.write(failing)
    results = await asyncio.gather(
        store.append_events([NewEvent(a, "vote", clock.now(), "web:bob")]),
        store._engine.write(failing),
        store.append_events([NewEvent(a, "vote", clock.now(), "web:carol")]),
        return_exceptions=True,
    )
    assert [type(r) for r in results] == [type(None), ValueError, type(None)]
    events = await store.audit_events([a])
    assert [e.actor for e in events] == [None, "web:alice", "web:bob", "web:carol"]
    assert [e.seq for e in events] == [1, 2, 3, 4]
    assert (await audit.verify()).ok


async def test_migration_15_seals_what_the_head_rows_had_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A database at version 14: approval A's head moved past its sealed seq, B's did not. After
    the migration, the first checkpoint seals A at its last event (and B's again: harmless)."""
    url, path = f"sqlite:///{tmp_path / 'old.db'}", tmp_path / "old.db"
    with monkeypatch.context() as m:
        m.setattr(sqlite_migrate, "MIGRATIONS", tuple(x for x in sqlite_migrate.MIGRATIONS if x.version < 15))
        old = open_store(url)
        await old.open()
        await old.close()
    conn = sqlite3.connect(path)
    heads = {}
    for name, sealed in (("a", 1), ("b", 2)):
        prev = GENESIS
        for seq in (1, 2):
            prev = event_hash(prev, seq, name, "vote", "web:alice", float(seq), None, "{}")
            conn.execute(
                "INSERT INTO events (approval_id, kind, at, actor, channel, data, seq, hash)"
                " VALUES (?, 'vote', ?, 'web:alice', NULL, '{}', ?, ?)",
                (name, float(seq), seq, prev),
            )
        heads[name] = prev
        conn.execute(
            "INSERT INTO audit_heads (approval_id, seq, hash, sealed_seq) VALUES (?, 2, ?, ?)", (name, prev, sealed)
        )
    conn.commit()
    conn.close()
    store = open_store(url)  # migrates to 15
    await store.open()
    try:
        audit = AuditService(store, FakeClock())
        checkpoint = await audit.seal()
        assert sorted((lf.approval_id, lf.seq, lf.hash) for lf in checkpoint.leaves) == [
            ("a", 2, heads["a"]),
            ("b", 2, heads["b"]),
        ]
        assert (await audit.seal()).leaves == ()
        await store.append_events([NewEvent("a", "approved", FakeClock().now(), "web:alice")])
        assert [(e.seq, e.kind) for e in await store.audit_events(["a"])][-1] == (3, "approved")
        assert (await audit.verify()).ok
    finally:
        await store.close()


def test_the_storm_bench_extends_the_chains_its_bulk_load_wrote(tmp_path: Path) -> None:
    """bench d's bulk load chains its events as the store would, so that its storm reads and
    extends real heads (what production pays), and the file it leaves verifies."""
    from bench import inproc

    assert inproc.storm(tmp_path, 40)["decided"] == 40
    db = tmp_path / "storm-40.db"
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT approval_id, seq FROM events ORDER BY approval_id, id").fetchall()
    chains: dict[str, list[int]] = {}
    for approval_id, seq in rows:
        chains.setdefault(approval_id, []).append(seq)
    # suspended and card_posted from the load, timed_out and job_queued from the storm
    assert len(chains) == 40 and all(seqs == [1, 2, 3, 4] for seqs in chains.values())

    async def verify() -> bool:
        store = open_store(f"sqlite:///{db}")
        await store.open()
        try:
            audit = AuditService(store, FakeClock())
            await audit.seal()  # what the gateway's minute timer does: unsealed old events fail
            return (await audit.verify()).ok
        finally:
            await store.close()

    assert asyncio.run(verify())
