"""The SQLite writer's group commit: a batch is one transaction, a failing op loses only itself."""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import replace
from pathlib import Path

from gateway.core.keys import args_hash
from gateway.core.models import Approval, NewEvent, NewOutbox, OutboxKind, Policy, Status
from gateway.store.sqlite import SQLiteStore
from gateway.testing import FakeClock


def _approval(n: int, key: str | None = None) -> Approval:
    now = FakeClock().now()
    return Approval(
        id=f"id{n:014d}",
        idempotency_key=key or f"key-{n}",
        run_id=f"run-{n}",
        step="charge",
        title="t",
        summary="",
        args={"n": n},
        state=None,
        channels=("web",),
        approvers=(),
        policy=Policy(),
        worker=None,
        requested_by=None,
        status=Status.WAITING,
        created_at=now,
        deadline=None,
        args_hash=args_hash({"n": n}),
    )


async def _create(store: SQLiteStore, a: Approval) -> tuple[Approval, bool]:
    event = NewEvent(a.id, "suspended", a.created_at)
    return await store.create_approval(a, [event], [NewOutbox(a.id, "web", OutboxKind.POST)])


def _count(path: Path, table: str) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


async def test_a_failing_op_in_a_batch_loses_only_itself(tmp_path: Path) -> None:
    path = tmp_path / "g.db"
    store = SQLiteStore(str(path))
    await store.open()
    try:

        def bad(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO inbound (key, at) VALUES ('half-done', 1)")
            raise RuntimeError("boom")

        # Queued together, so they share one batch (the writer drains the queue).
        results = await asyncio.gather(
            *(_create(store, _approval(n)) for n in range(10)),
            store._engine.write(bad),
            *(_create(store, _approval(n)) for n in range(10, 20)),
            return_exceptions=True,
        )
    finally:
        await store.close()
    assert isinstance(results[10], RuntimeError)
    assert all(r == (_approval(i if i < 10 else i - 1), True) for i, r in enumerate(results) if i != 10)
    assert _count(path, "approvals") == 20
    assert _count(path, "events") == 20
    assert _count(path, "outbox") == 20
    assert _count(path, "inbound") == 0  # the failing op's own write was rolled back


async def test_same_key_returns_the_first_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "g.db"
    store = SQLiteStore(str(path))
    await store.open()
    try:
        first = _approval(1, key="same")
        second = replace(_approval(2, key="same"))
        results = await asyncio.gather(_create(store, first), _create(store, second))
        again = await _create(store, replace(first, id="other0000000000"))
    finally:
        await store.close()
    assert results[0] == (first, True)
    assert results[1][1] is False and results[1][0].id == first.id
    assert again[1] is False and again[0].id == first.id
    assert (_count(path, "approvals"), _count(path, "events"), _count(path, "outbox")) == (1, 1, 1)


async def test_an_id_collision_is_an_error_not_a_duplicate(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "g.db"))
    await store.open()
    try:
        await _create(store, _approval(1))
        clash = replace(_approval(2), id=_approval(1).id)
        try:
            await _create(store, clash)
        except sqlite3.IntegrityError as exc:
            assert "already exists" in str(exc)
        else:
            raise AssertionError("a second approval with the same id was accepted")
        assert await store.get_approval(clash.id) == _approval(1)
    finally:
        await store.close()


async def test_a_transition_saves_every_mutable_field_and_keeps_the_request(tmp_path: Path) -> None:
    from gateway.core.models import Decision, Outcome, Source, Vote

    store = SQLiteStore(str(tmp_path / "g.db"))
    await store.open()
    try:
        before = _approval(1)
        await _create(store, before)
        at = before.created_at
        after = replace(
            before,
            channels=("web", "slack:C1"),
            approvers=("web:bob",),
            policy=Policy(quorum=2),
            status=Status.APPROVED,
            version=2,
            deadline=at,
            wake_at=None,
            votes=(Vote("web:bob", Outcome.APPROVE, at),),
            decision=Decision(Outcome.APPROVE, "web:bob", at, Source.HUMAN),
            escalations=1,
            reminders_sent=2,
        )
        assert await store.save_transition(after, 1, [])
        assert await store.get_approval(before.id) == after
        # A stale version changes nothing (compare-and-set).
        assert not await store.save_transition(replace(after, status=Status.REJECTED, version=3), 1, [])
        assert await store.get_approval(before.id) == after
    finally:
        await store.close()


async def test_the_connection_threads_end_with_the_store(tmp_path: Path) -> None:
    """The engine runs its own threads (no aiosqlite), named after the file: closing the store
    ends them, and a store that fails to open leaks none."""
    import threading

    def threads_of(path: Path) -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.endswith(f" {path}") and t.is_alive()]

    async def ended(path: Path) -> bool:
        for _ in range(100):  # a thread ends once it has read its stop mark
            if not threads_of(path):
                return True
            await asyncio.sleep(0.01)
        return False

    path = tmp_path / "g.db"
    store = SQLiteStore(str(path))
    await store.open()
    assert sorted(t.name.split()[0] for t in threads_of(path)) == ["sqlite-reader", "sqlite-writer"]
    await store.close()
    assert await ended(path)
    bad = tmp_path / "dir.db"
    bad.mkdir()  # not a file: the connection fails
    try:
        await SQLiteStore(str(bad)).open()
    except sqlite3.OperationalError:
        pass
    else:
        raise AssertionError("opened a directory as a database")
    assert await ended(bad)
