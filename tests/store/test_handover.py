"""Claims handed back and taken over without waiting out `store.lease` (60 s here): a stopping
gateway's (`release_claims`, both backends), a dead `serve`'s on SQLite (`take_over` behind the
file's serve lock), and a gone replica's on PostgreSQL (`reap`: its advisory lock is free AND its
heartbeat stale), while a stalled replica, or one whose connection was only cut, keeps them."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import asyncpg
import pytest

from gateway.core.errors import StoreInUse
from gateway.core.models import NewOutbox, OutboxKind, Status
from gateway.store import NewJob, Store, open_store
from gateway.store.postgres import liveness
from tests.store.conftest import NOW, StoreFactory, make_approval

LEASE = timedelta(seconds=60)
LATER = NOW + timedelta(minutes=1)  # everything below is due then, and every lease still runs


async def _hold_one_of_each(store: Store, owner: str) -> tuple[int, int, str]:
    """`owner` claims a resume job, an outbox row and a due wake-up: (job id, outbox id, approval id)."""
    decided = make_approval()
    await store.create_approval(decided, [], [])
    done = decided.evolve(status=Status.APPROVED, version=2)
    assert await store.save_transition(
        done, 1, [], [NewOutbox(decided.id, "web", OutboxKind.SYNC)], NewJob(decided.id, "agent")
    )
    due = make_approval(wake_at=NOW)
    await store.create_approval(due, [], [])
    [job] = [c.job for c in await store.claim_launches(LATER, owner, LEASE, 5)]
    (row,) = await store.claim_outbox(LATER, owner, LEASE, 5)
    (wake,) = await store.claim_due(LATER, owner, LEASE, 5)
    return job.id, row.id, wake.id


async def _claimable(store: Store, owner: str) -> tuple[list[int], list[int], list[str]]:
    jobs = [c.job.id for c in await store.claim_launches(LATER, owner, LEASE, 5)]
    rows = [o.id for o in await store.claim_outbox(LATER, owner, LEASE, 5)]
    return jobs, rows, [a.id for a in await store.claim_due(LATER, owner, LEASE, 5)]


async def test_a_stopping_owner_hands_its_claims_back_at_once(store_factory: StoreFactory) -> None:
    a, b = await store_factory(), await store_factory()
    job, row, wake = await _hold_one_of_each(a, "A")
    assert await _claimable(b, "B") == ([], [], [])  # leased for a minute
    assert await a.release_claims("other", LATER) == 0  # only the owner's own
    assert await a.release_claims("A", LATER) == 3
    assert await _claimable(b, "B") == ([job], [row], [wake])  # at once, at the same `now`
    taken = await b.get_job((await b.list_jobs())[0].approval_id)
    assert taken is not None and (taken.claimed_by, taken.attempts) == ("B", 2)  # the cut attempt counts


async def test_a_sqlite_serve_takes_over_every_claim_behind_the_file_lock(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'gw.db'}"
    first, second = open_store(url), open_store(url)
    await first.open()
    await second.open()
    try:
        assert await first.take_over("first", NOW, exclusive=True) == 0
        job, row, wake = await _hold_one_of_each(first, "first")
        with pytest.raises(StoreInUse, match=r"another hitl-gateway serve \(pid \d+\) is using .*gw\.db"):
            await second.take_over("second", NOW, exclusive=True)
        assert await second.take_over("cli", NOW) == 0  # not a serve: no lock, nothing released
        assert await _claimable(second, "second") == ([], [], [])
        await first.close()  # the process is gone: its lock with it
        assert await second.take_over("second", LATER, exclusive=True) == 3
        assert await _claimable(second, "second") == ([job], [row], [wake])
    finally:
        await first.close()
        await second.close()


async def test_a_restarted_sqlite_serve_leaves_a_live_pollers_claims_alone(tmp_path: Path) -> None:
    """`serve` beside `telegram poll` on one file (docs/telegram.md): both claim work. A restarted
    serve takes over the dead serve's claims, not those of the poller that still runs."""
    url = f"sqlite:///{tmp_path / 'gw.db'}"
    dead, poller, restarted = open_store(url), open_store(url), open_store(url)
    for store in (dead, poller, restarted):
        await store.open()
    try:
        await dead.take_over("serve-1", NOW, exclusive=True)
        await poller.take_over("poller", NOW)  # not a serve: no serve lock
        mine = await _hold_one_of_each(dead, "serve-1")
        assert await _claimable(poller, "poller") == ([], [], [])  # serve-1 holds them
        polled = await _hold_one_of_each(poller, "poller")
        await dead.close()  # gone (a kill leaves its claimer file unlocked: tests/integration/test_worker_crash.py)
        assert await restarted.take_over("serve-2", LATER, exclusive=True) == 3  # serve-1's, not the poller's
        assert await _claimable(restarted, "serve-2") == ([mine[0]], [mine[1]], [mine[2]])
        await poller.close()  # now the poller dies too: the next start takes its claims
        again = open_store(url)
        await again.open()
        try:
            await restarted.close()
            assert await again.take_over("serve-3", LATER, exclusive=True) == 3 + 3  # serve-2's and the poller's
            assert polled[0] in (await _claimable(again, "serve-3"))[0]
        finally:
            await again.close()
    finally:
        for store in (dead, poller, restarted):
            await store.close()


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> float:
    """A 0.3 s staleness instead of 1.5 s, to keep the test short."""
    monkeypatch.setattr(liveness, "STALE", 0.3)
    monkeypatch.setattr(liveness, "REJOIN_GRACE", 0.6)
    return 0.3


async def test_a_gone_replica_is_reaped_a_stalled_one_is_not(pg_url: str, quick: float) -> None:
    a, b = open_store(pg_url), open_store(pg_url)
    await a.open()
    await b.open()
    try:
        await a.take_over("A", NOW)
        await b.take_over("B", NOW)
        held = await _hold_one_of_each(a, "A")
        # A stalls (no heartbeat for twice the staleness) but keeps its connection, hence its lock.
        await asyncio.sleep(2 * quick)
        assert await b.reap("B", LATER) == 0
        assert await _claimable(b, "B") == ([], [], [])
        # A's connection is cut (a kill): its lock is free at once, but its heartbeat is still fresh.
        assert await a.reap("A", LATER) == 0
        a._liveness._conn.terminate()  # type: ignore[attr-defined,union-attr]
        assert await b.reap("B", LATER) == 0  # it may be reconnecting: not yet
        await asyncio.sleep(quick + 0.1)
        assert await b.reap("B", LATER) == 3  # lock free and heartbeat stale: gone
        assert await b.reap("B", LATER) == 0  # once
        assert await _claimable(b, "B") == ([held[0]], [held[1]], [held[2]])
        # A was alive after all: it re-registers, and waits before reaping anyone itself.
        assert await a.reap("A", LATER) == 0
        await asyncio.sleep(quick + 0.1)
        assert await b.reap("B", LATER) == 0  # A holds a lock again
    finally:
        await a.close()
        await b.close()


async def test_a_replica_that_stopped_is_no_longer_registered(pg_url: str) -> None:
    a = open_store(pg_url)
    await a.open()
    try:
        await a.take_over("A", NOW)
        assert await a.release_claims("A", NOW) == 0
        assert await a.reap("A", NOW) == 0  # no heartbeat after the hand-over: nothing to renew
    finally:
        await a.close()
    conn = await asyncpg.connect(pg_url)
    try:
        assert await conn.fetch("SELECT owner FROM replicas") == []
    finally:
        await conn.close()


async def test_a_hand_back_that_cannot_take_a_row_leaves_it_to_the_reapers(pg_url: str, quick: float) -> None:
    """A row another transaction holds is skipped (a stopping replica does not wait at exit), and
    the replica stays registered: once it is gone, another replica releases what it kept."""
    a, b = open_store(pg_url), open_store(pg_url)
    await a.open()
    await b.open()
    conn = await asyncpg.connect(pg_url)
    try:
        await a.take_over("A", NOW)
        await b.take_over("B", NOW)
        job, row, wake = await _hold_one_of_each(a, "A")
        async with conn.transaction():
            await conn.execute("SELECT 1 FROM resume_jobs WHERE id = $1 FOR UPDATE", job)
            assert await a.release_claims("A", LATER) == 2  # the delivery and the wake-up, at once
        await a.close()
        assert [r["owner"] for r in await conn.fetch("SELECT owner FROM replicas ORDER BY owner")] == ["A", "B"]
        await asyncio.sleep(quick + 0.1)
        assert await b.reap("B", LATER) == 1  # the job it kept
        assert await _claimable(b, "B") == ([job], [row], [wake])
    finally:
        await conn.close()
        await a.close()
        await b.close()
