"""Store contract for the scheduler's batched compare-and-set (`save_policy_transitions`).

Parametrise `store` over more backends (Postgres) when they exist: the rules are the same."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from gateway import policy as rules
from gateway.models import NewEvent, NewOutbox, OutboxKind, Policy, Status
from gateway.store import NewJob, Store, TransitionWrite, open_store
from gateway.testing import FakeClock, make_approval


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    s = open_store(db_url)
    await s.open()
    yield s
    await s.close()


async def test_each_write_is_its_own_cas_and_only_winners_commit(store: Store) -> None:
    t0 = FakeClock().now()
    policy = Policy(name="p", timeout=timedelta(minutes=1))
    approvals = [make_approval(policy, t0, n) for n in range(3)]
    for a in approvals:
        await store.create_approval(a, [], [])
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
