"""Store contract for the scheduler's batched compare-and-set (`save_policy_transitions`).

Parametrise `store` over more backends (Postgres) when they exist: the rules are the same."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import pytest

from gateway.core import policy as rules
from gateway.core.models import Approval, NewEvent, NewOutbox, OutboxKind, Policy, Status
from gateway.store import NewJob, Store, TransitionWrite, open_store
from gateway.testing import FakeClock, make_approval


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    s = open_store(db_url)
    await s.open()
    yield s
    await s.close()


async def _created(store: Store, count: int) -> tuple[datetime, list[Approval]]:
    """`count` waiting approvals with a one-minute timeout, stored; and when they were made."""
    t0 = FakeClock().now()
    policy = Policy(name="p", timeout=timedelta(minutes=1))
    approvals = [make_approval(policy, t0, n) for n in range(count)]
    for a in approvals:
        await store.create_approval(a, [], [])
    return t0, approvals


async def test_each_write_is_its_own_cas_and_only_winners_commit(store: Store) -> None:
    t0, approvals = await _created(store, 3)
    moved = approvals[1].evolve(version=approvals[1].version + 1, title="changed by a human meanwhile")
    assert await store.save_transition(moved, approvals[1].version, [])
    now = t0 + timedelta(minutes=1)
    writes = []
    for a in approvals:
        t = rules.time_out(a, now)
        writes.append(
            TransitionWrite(
                t.approval,
                a.version,
                [NewEvent(a.id, t.event, now)],
                [NewOutbox(a.id, "web", OutboxKind.SYNC)],
                NewJob(a.id, "agent"),
            )
        )
    assert await store.save_policy_transitions(writes) == [True, False, True]
    for a, won in zip(approvals, (True, False, True), strict=True):
        got = await store.get_approval(a.id)
        assert got is not None
        assert (got.status is Status.TIMED_OUT) is won
        assert (got.decision is not None and got.decision.decided_by == "policy") is won
        assert (got.wake_at is None) is won
        assert [e.kind for e in await store.list_events(a.id)] == (["timed_out"] if won else [])
        assert len(await store.list_outbox(a.id)) == (1 if won else 0)
        assert (await store.get_job(a.id) is not None) is won
    loser = await store.get_approval(approvals[1].id)
    assert loser is not None and loser.title == "changed by a human meanwhile"  # nothing overwritten
    assert await store.save_policy_transitions(writes) == [False, False, False]  # replay: no effect
    assert await store.next_wake_at() == approvals[1].deadline
    due = await store.due_approvals(now, 10)
    assert [a.id for a in due] == [approvals[1].id]


async def test_a_batch_naming_one_approval_twice_lets_only_its_first_cas_win(store: Store) -> None:
    t0, (a,) = await _created(store, 1)
    now = t0 + timedelta(minutes=1)
    first, again = rules.time_out(a, now), rules.time_out(a, now + timedelta(seconds=1))
    writes = [TransitionWrite(t.approval, a.version, [NewEvent(a.id, t.event, now)]) for t in (first, again)]
    assert await store.save_policy_transitions(writes) == [True, False]
    got = await store.get_approval(a.id)
    assert got is not None and got.decision == first.approval.decision
    assert [e.kind for e in await store.list_events(a.id)] == ["timed_out"]
    assert await store.save_policy_transitions([]) == []


async def test_a_large_batch_where_every_cas_wins_writes_everything(store: Store) -> None:
    t0, approvals = await _created(store, 300)
    now = t0 + timedelta(minutes=1)
    writes = []
    for a in approvals:
        t = rules.time_out(a, now)
        events = [NewEvent(a.id, t.event, now, data=dict(t.data)), NewEvent(a.id, "job_queued", now)]
        writes.append(TransitionWrite(t.approval, a.version, events, [NewOutbox(a.id, "web", OutboxKind.SYNC)]))
    assert await store.save_policy_transitions(writes) == [True] * len(writes)
    assert (await store.count_by_status()).get("timed_out") == len(approvals)
    for a in (approvals[0], approvals[150], approvals[-1]):
        got = await store.get_approval(a.id)
        assert got is not None and got.status is Status.TIMED_OUT and got.version == a.version + 1
        assert [e.kind for e in await store.list_events(a.id)] == ["timed_out", "job_queued"]
        assert len(await store.list_outbox(a.id)) == 1
    assert await store.next_wake_at() is None
