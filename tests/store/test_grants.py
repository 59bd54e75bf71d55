"""The grants port on every backend: a grant written with its approve (or alone), read back,
listed live or all, looked up for a suspend, revoked once; a use recorded in the transaction
that creates the approval it decided, and refused (nothing written) once the grant is dead."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from gateway.core.grants import Grant
from gateway.core.models import Decision, NewEvent, Outcome, Source, Status
from gateway.store import GrantUnavailable, NewJob, Store
from tests.store.conftest import NOW, make_approval


def _grant(gid: str = "g1", **over: object) -> Grant:
    grant = Grant(
        id=gid,
        namespace="agent:billing",
        step="charge",
        run_id=None,
        fields=None,
        args_hash="h" * 64,
        duration="1h",
        granted_by="web:alice",
        approval_id="a1",
        created_at=NOW,
        expires_at=NOW + timedelta(hours=1),
        person="Alice",
    )
    return replace(grant, **over)  # type: ignore[arg-type]


async def test_a_grant_round_trips_and_lists_live_or_all(store: Store) -> None:
    run = _grant("g2", run_id="run-7", fields=("amount", "currency"), duration="run", person=None)
    await store.create_grant(_grant())
    await store.create_grant(run)
    await store.create_grant(_grant("old", created_at=NOW - timedelta(hours=3), expires_at=NOW - timedelta(hours=2)))
    assert await store.get_grant("g2") == run
    assert await store.get_grant("missing") is None
    assert {g.id for g in await store.list_grants(NOW)} == {"g1", "g2"}
    assert {g.id for g in await store.list_grants(NOW, live=False)} == {"g1", "g2", "old"}


async def test_live_grants_are_those_of_the_namespace_step_and_run(store: Store) -> None:
    await store.create_grant(_grant("any-run"))
    await store.create_grant(_grant("this-run", run_id="run-1"))
    await store.create_grant(_grant("other-run", run_id="run-2"))
    await store.create_grant(_grant("other-agent", namespace="agent:mail"))
    await store.create_grant(_grant("other-step", step="refund"))
    await store.create_grant(_grant("expired", expires_at=NOW))
    found = {g.id for g in await store.live_grants("agent:billing", "charge", "run-1", NOW)}
    assert found == {"any-run", "this-run"}


async def test_revoking_is_once_with_its_events(store: Store) -> None:
    a = make_approval()
    await store.create_approval(a, [], [])
    await store.create_grant(_grant(approval_id=a.id))
    event = NewEvent(a.id, "grant_revoked", NOW, "operator:test", data={"grant": "g1"})
    assert await store.revoke_grant("g1", "operator:test", NOW, [event])
    assert not await store.revoke_grant("g1", "operator:test", NOW, [event])  # once
    got = await store.get_grant("g1")
    assert got is not None and got.revoked_at == NOW and got.revoked_by == "operator:test"
    assert await store.live_grants("agent:billing", "charge", "run-1", NOW) == []
    assert [e.kind for e in await store.list_events(a.id)] == ["grant_revoked"]


async def test_a_grant_commits_with_the_approve_or_not_at_all(store: Store) -> None:
    a = make_approval()
    await store.create_approval(a, [], [])
    decided = a.evolve(status=Status.APPROVED, decision=Decision(Outcome.APPROVE, "web:alice", NOW), version=2)
    assert not await store.save_transition(decided, a.version + 5, [], grant=_grant("lost"))  # CAS lost
    assert await store.get_grant("lost") is None
    assert await store.save_transition(decided, a.version, [], grant=_grant("won", approval_id=a.id))
    got = await store.get_grant("won")
    assert got is not None and got.approval_id == a.id


async def test_a_use_is_recorded_with_the_approval_it_decided(store: Store) -> None:
    await store.create_grant(_grant())
    decision = Decision(Outcome.APPROVE, "grant:g1", NOW, Source.GRANT)
    a = make_approval(status=Status.APPROVED, decision=decision, created_at=NOW + timedelta(minutes=1))
    events = [NewEvent(a.id, "approved", a.created_at, "grant:g1")]
    stored, created = await store.create_approval(a, events, [], job=NewJob(a.id, "agent"), grant="g1")
    assert created and stored == a
    got = await store.get_grant("g1")
    assert got is not None and got.uses == 1 and got.last_used_at == a.created_at
    replay = make_approval(key=a.idempotency_key, created_at=a.created_at)
    _, again = await store.create_approval(replay, [], [], grant="g1")  # a replay inserts nothing
    got = await store.get_grant("g1")
    assert not again and got is not None and got.uses == 1


async def test_a_dead_grant_decides_nothing_and_nothing_is_written(store: Store) -> None:
    await store.create_grant(_grant())
    await store.create_grant(_grant("expired", expires_at=NOW))
    assert await store.revoke_grant("g1", "operator:test", NOW)
    for gid in ("g1", "expired"):
        a = make_approval(status=Status.APPROVED, created_at=NOW + timedelta(seconds=1))
        with pytest.raises(GrantUnavailable):
            await store.create_approval(a, [NewEvent(a.id, "approved", NOW, f"grant:{gid}")], [], grant=gid)
        assert await store.get_approval(a.id) is None
        assert await store.list_events(a.id) == []
        assert await store.get_job(a.id) is None
