"""The Store contract: every test runs on SQLite and on PostgreSQL (`store_url` is parametrised).

Races are real: concurrent tasks, and several store instances on one database standing for
several replicas.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from gateway.core.models import (
    Decision,
    DeliveryStatus,
    EditTerms,
    JobStatus,
    NewEvent,
    NewOutbox,
    OutboxKind,
    Outcome,
    Proposal,
    Status,
    StepRecord,
    StepStatus,
)
from gateway.core.principals import namespace_of
from gateway.store import CardUpdate, NewJob, Prompt, Store
from gateway.store.migrations import LATEST
from tests.store.conftest import NOW, StoreFactory, make_approval

LEASE = timedelta(seconds=60)


def _decided(approval, outcome: Outcome = Outcome.APPROVE):  # type: ignore[no-untyped-def]
    status = Status.APPROVED if outcome is Outcome.APPROVE else Status.REJECTED
    decision = Decision(outcome, "web:alice", NOW)
    return approval.evolve(status=status, decision=decision, wake_at=None, version=approval.version + 1)


async def _create(store: Store, n: int = 1, channels: tuple[str, ...] = ("web",)) -> list[str]:
    ids = []
    for _ in range(n):
        a = make_approval(channels=channels)
        posts = [NewOutbox(a.id, c, OutboxKind.POST) for c in channels]
        await store.create_approval(a, [NewEvent(a.id, "suspended", NOW)], posts)
        ids.append(a.id)
    return ids


# ---------------------------------------------------------------- schema
async def test_open_migrates_and_reopening_is_a_no_op(store: Store, store_factory: StoreFactory) -> None:
    assert await store.schema_version() == LATEST
    ids = await _create(store)
    again = await store_factory()
    assert await again.schema_version() == LATEST
    assert await again.get_approval(ids[0]) is not None  # nothing was re-created


async def test_concurrent_opens_migrate_once(store_url: str, store_factory: StoreFactory) -> None:
    stores = await asyncio.gather(*(store_factory() for _ in range(8)))
    assert {await s.schema_version() for s in stores} == {LATEST}


# ---------------------------------------------------------------- approvals
async def test_create_and_get_round_trip(store: Store) -> None:
    a = make_approval(deadline=NOW + timedelta(minutes=5), wake_at=NOW + timedelta(minutes=5), state=[1, "x"])
    stored, created = await store.create_approval(a, [NewEvent(a.id, "suspended", NOW, data={"k": 1})], [])
    assert created and stored == a
    assert await store.get_approval(a.id) == a
    assert await store.get_approval("missing") is None
    assert [e.kind for e in await store.list_events(a.id)] == ["suspended"]


async def test_edit_terms_a_proposal_and_extensions_round_trip(store: Store) -> None:
    """v12's columns: what may be edited, the edited args a round votes on, and an approval
    decided with them (its decision's args and patch), through create and save_transition."""
    schema = {"type": "object", "properties": {"amount": {"type": "integer"}}}
    a = make_approval(terms=EditTerms(schema, ("amount",)))
    await store.create_approval(a, [], [])
    assert await store.get_approval(a.id) == a
    patch = [{"op": "replace", "path": "/amount", "value": 3900}]
    proposal = Proposal({"amount": 3900}, patch, "web:alice", 1, "h1", name="Alice")
    decision = Decision(Outcome.APPROVE, "web:alice", NOW, args={"amount": 3900}, original_args=a.args, patch=patch)
    after = a.evolve(proposal=proposal, extensions=2, status=Status.APPROVED, decision=decision, version=2)
    assert await store.save_transition(after, a.version, [], [])
    assert await store.get_approval(a.id) == after
    assert (await store.list_approvals())[0] == after


async def test_create_is_idempotent_by_key(store: Store) -> None:
    first = make_approval(key="same-key")
    await store.create_approval(
        first, [NewEvent(first.id, "suspended", NOW)], [NewOutbox(first.id, "web", OutboxKind.POST)]
    )
    other = make_approval(key="same-key")
    stored, created = await store.create_approval(other, [NewEvent(other.id, "suspended", NOW)], [])
    assert not created and stored.id == first.id
    assert await store.get_approval(other.id) is None
    assert await store.list_events(other.id) == []


async def test_concurrent_creates_with_one_key_make_one_approval(store_factory: StoreFactory) -> None:
    stores = [await store_factory() for _ in range(3)]
    candidates = [make_approval(key="raced") for _ in range(30)]
    results = await asyncio.gather(
        *(
            stores[i % 3].create_approval(
                a, [NewEvent(a.id, "suspended", NOW)], [NewOutbox(a.id, "web", OutboxKind.POST)]
            )
            for i, a in enumerate(candidates)
        )
    )
    assert sum(created for _, created in results) == 1
    assert len({stored.id for stored, _ in results}) == 1
    winner = results[0][0].id
    assert len(await stores[0].list_events(winner)) == 1
    assert len(await stores[0].list_outbox(winner)) == 1


async def test_list_approvals_filters_orders_and_pages(store: Store) -> None:
    for i in range(5):
        a = make_approval(run_id=f"run-{i % 2}", created_at=NOW + timedelta(seconds=i))
        await store.create_approval(a, [], [])
    newest_first = await store.list_approvals()
    assert [a.created_at for a in newest_first] == sorted((a.created_at for a in newest_first), reverse=True)
    assert len(await store.list_approvals(run_id="run-0")) == 3
    assert len(await store.list_approvals(limit=2, offset=4)) == 1
    assert await store.list_approvals(status=Status.APPROVED) == []
    assert await store.count_by_status() == {"waiting_approval": 5}


async def test_save_transition_is_compare_and_set(store: Store) -> None:
    a = make_approval()
    await store.create_approval(a, [], [])
    after = _decided(a)
    events = [NewEvent(a.id, "approved", NOW)]
    assert not await store.save_transition(after, a.version + 5, events, [NewOutbox(a.id, "web", OutboxKind.SYNC)])
    assert await store.get_approval(a.id) == a and await store.list_events(a.id) == []
    assert await store.list_outbox(a.id) == []
    job = NewJob(a.id, "agent")
    assert await store.save_transition(after, a.version, events, [NewOutbox(a.id, "web", OutboxKind.SYNC)], job)
    assert await store.get_approval(a.id) == after
    assert [e.kind for e in await store.list_events(a.id)] == ["approved"]
    assert [o.kind for o in await store.list_outbox(a.id)] == [OutboxKind.SYNC]
    stored_job = await store.get_job(a.id)
    assert stored_job is not None and stored_job.status is JobStatus.QUEUED and stored_job.worker == "agent"
    assert await store.count_by_status() == {"approved": 1}


async def test_fifty_concurrent_transitions_have_one_winner(store_factory: StoreFactory) -> None:
    stores = [await store_factory() for _ in range(3)]
    a = make_approval()
    await stores[0].create_approval(a, [], [])

    async def attempt(i: int) -> bool:
        outcome = Outcome.APPROVE if i % 2 else Outcome.REJECT
        after = _decided(a, outcome)
        event = NewEvent(a.id, after.status.value, NOW, actor=f"web:u{i}")
        return await stores[i % 3].save_transition(
            after, a.version, [event], [NewOutbox(a.id, "web", OutboxKind.SYNC)], NewJob(a.id, "agent")
        )

    results = await asyncio.gather(*(attempt(i) for i in range(50)))
    assert sum(results) == 1
    events = await stores[0].list_events(a.id)
    assert len(events) == 1
    final = await stores[0].get_approval(a.id)
    assert final is not None and final.version == a.version + 1 and final.status.value == events[0].kind
    assert len(await stores[0].list_jobs()) == 1


async def test_due_approvals_and_next_wake(store: Store) -> None:
    assert await store.next_wake_at() is None
    late = make_approval(wake_at=NOW + timedelta(minutes=10))
    soon = make_approval(wake_at=NOW + timedelta(minutes=1))
    await store.create_approval(late, [], [])
    await store.create_approval(soon, [], [])
    await store.create_approval(make_approval(), [], [])
    assert await store.next_wake_at() == soon.wake_at
    assert await store.due_approvals(NOW, 10) == []
    assert [a.id for a in await store.due_approvals(NOW + timedelta(hours=1), 10)] == [soon.id, late.id]
    assert [a.id for a in await store.due_approvals(NOW + timedelta(hours=1), 1)] == [soon.id]


async def test_claim_due_leases_each_wake_up_to_one_owner(store_factory: StoreFactory) -> None:
    a, b = await store_factory(), await store_factory()
    due = [make_approval(wake_at=NOW + timedelta(seconds=i)) for i in range(3)]
    for approval in [*due, make_approval(wake_at=NOW + timedelta(hours=1)), make_approval()]:
        await a.create_approval(approval, [], [])
    later = NOW + timedelta(minutes=1)
    first = await a.claim_due(later, "A", LEASE, 2)
    assert [x.id for x in first] == [due[0].id, due[1].id] and first[0] == due[0]
    assert [x.id for x in await b.claim_due(later, "B", LEASE, 10)] == [due[2].id]
    assert await b.claim_due(later + timedelta(seconds=30), "B", LEASE, 10) == []
    # A applies the first one (a reminder moves wake_at): the lease is released with it.
    reminded = due[0].evolve(version=2, reminders_sent=1, wake_at=later + timedelta(seconds=10))
    assert await a.save_transition(reminded, 1, [NewEvent(due[0].id, "reminded", later)])
    assert [x.id for x in await b.claim_due(later + timedelta(seconds=10), "B", LEASE, 10)] == [due[0].id]
    # A died holding due[1]: once its lease runs out, B takes it.
    retaken = await b.claim_due(later + LEASE + timedelta(seconds=1), "B", LEASE, 10)
    assert due[1].id in {x.id for x in retaken}


async def test_concurrent_due_claims_take_each_approval_once(store_factory: StoreFactory) -> None:
    stores = [await store_factory() for _ in range(3)]
    for i in range(30):
        await stores[0].create_approval(make_approval(wake_at=NOW + timedelta(milliseconds=i)), [], [])
    claimed: list[str] = []

    async def scheduler(i: int) -> None:
        while batch := await stores[i].claim_due(NOW + timedelta(seconds=1), f"s{i}", LEASE, 4):
            claimed.extend(x.id for x in batch)

    await asyncio.gather(*(scheduler(i) for i in range(3)))
    assert len(claimed) == len(set(claimed)) == 30


async def test_events_append_in_order(store: Store) -> None:
    (aid,) = await _create(store)
    await store.append_events([NewEvent(aid, "denied", NOW, "telegram:1", "telegram", {"reason": "no"})])
    await store.append_events([NewEvent(aid, "duplicate_vote", NOW)])
    events = await store.list_events(aid)
    assert [e.kind for e in events] == ["suspended", "denied", "duplicate_vote"]
    assert events[1].actor == "telegram:1" and events[1].data == {"reason": "no"}
    assert events[0].id < events[1].id < events[2].id


async def test_last_event_id_moves_with_every_event(store: Store) -> None:
    assert await store.last_event_id() == 0
    (aid,) = await _create(store)
    first = await store.last_event_id()
    await store.append_events([NewEvent(aid, "duplicate_vote", NOW)])
    assert await store.last_event_id() > first == (await store.list_events(aid))[0].id


# ---------------------------------------------------------------- outbox
async def test_claim_lease_and_reclaim_after_expiry(store_factory: StoreFactory) -> None:
    a, b = await store_factory(), await store_factory()
    (aid,) = await _create(a)
    first = await a.claim_outbox(NOW, "A", LEASE, 10)
    assert [(i.approval_id, i.kind) for i in first] == [(aid, OutboxKind.POST)]
    assert await b.claim_outbox(NOW + timedelta(seconds=30), "B", LEASE, 10) == []
    taken = await b.claim_outbox(NOW + timedelta(seconds=61), "B", LEASE, 10)
    assert [i.id for i in taken] == [first[0].id]
    assert not await a.finish_outbox(first[0].id, "A", now=NOW, status=DeliveryStatus.DONE)  # lease lost
    assert await b.finish_outbox(taken[0].id, "B", now=NOW, status=DeliveryStatus.DONE)
    assert await a.claim_outbox(NOW + timedelta(hours=1), "A", LEASE, 10) == []


async def test_a_card_is_delivered_by_one_owner_at_a_time(store_factory: StoreFactory) -> None:
    a, b = await store_factory(), await store_factory()
    first, second = await _create(a, 2)
    (post,) = await a.claim_outbox(NOW, "A", LEASE, 1)
    assert post.approval_id == first
    await a.enqueue_outbox([NewOutbox(first, "web", OutboxKind.SYNC)], NOW)
    # B may not sync `first` while A still holds its post; it takes the other card.
    assert [(i.approval_id, i.kind) for i in await b.claim_outbox(NOW, "B", LEASE, 10)] == [(second, OutboxKind.POST)]
    assert await a.finish_outbox(post.id, "A", now=NOW, status=DeliveryStatus.DONE)
    assert [(i.approval_id, i.kind) for i in await b.claim_outbox(NOW, "B", LEASE, 10)] == [(first, OutboxKind.SYNC)]


async def test_concurrent_claims_take_each_row_once(store_factory: StoreFactory) -> None:
    stores = [await store_factory() for _ in range(4)]
    ids = await _create(stores[0], 25, channels=("web", "web:ops"))
    claimed: list[int] = []

    async def worker(i: int) -> None:
        while batch := await stores[i].claim_outbox(NOW, f"owner-{i}", LEASE, 3):
            claimed.extend(item.id for item in batch)

    await asyncio.gather(*(worker(i) for i in range(4)))
    assert len(claimed) == len(set(claimed)) == 2 * len(ids)


async def test_finish_outbox_records_card_retry_and_events(store: Store) -> None:
    (aid,) = await _create(store)
    (item,) = await store.claim_outbox(NOW, "A", LEASE, 10)
    retry_at = NOW + timedelta(seconds=30)
    assert await store.finish_outbox(
        item.id, "A", now=NOW, status=DeliveryStatus.PENDING, next_attempt_at=retry_at, error="429"
    )
    (row,) = await store.list_outbox(aid)
    assert (row.status, row.attempts, row.next_attempt_at, row.last_error) == (
        DeliveryStatus.PENDING,
        1,
        retry_at,
        "429",
    )
    assert await store.claim_outbox(NOW, "A", LEASE, 10) == []
    (item,) = await store.claim_outbox(retry_at, "A", LEASE, 10)
    card = CardUpdate("web", "/approvals/x", DeliveryStatus.DONE)
    event = NewEvent(aid, "card_posted", NOW, channel="web", data={"ref": "/approvals/x"})
    assert await store.finish_outbox(item.id, "A", now=NOW, status=DeliveryStatus.DONE, card=card, events=[event])
    stored = await store.get_card(aid, "web")
    assert stored is not None and stored.ref == "/approvals/x" and stored.posted_at == NOW
    assert [e.kind for e in await store.list_events(aid)] == ["suspended", "card_posted"]
    (row,) = await store.list_outbox(aid)
    assert (row.status, row.attempts) == (DeliveryStatus.DONE, 2)


async def test_card_update_keeps_ref_and_follows_a_moved_chat(store: Store) -> None:
    (aid,) = await _create(store, channels=("telegram:1",))
    await store.enqueue_outbox([NewOutbox(aid, "telegram:1", OutboxKind.SYNC)], NOW)
    post, sync = await store.claim_outbox(NOW, "A", LEASE, 10)
    await store.finish_outbox(
        post.id, "A", now=NOW, status=DeliveryStatus.DONE, card=CardUpdate("telegram:1", "77", DeliveryStatus.DONE)
    )
    synced = CardUpdate("telegram:1", None, DeliveryStatus.DONE)  # a sync keeps the card's ref
    await store.finish_outbox(sync.id, "A", now=NOW, status=DeliveryStatus.DONE, card=synced, count_attempt=False)
    (card,) = await store.list_cards(aid)
    assert (card.channel, card.ref) == ("telegram:1", "77")
    assert (await store.list_outbox(aid))[1].attempts == 0


async def test_one_post_per_card_and_syncs_coalesce(store: Store) -> None:
    (aid,) = await _create(store)
    await store.enqueue_outbox([NewOutbox(aid, "web", OutboxKind.POST)], NOW)
    await store.enqueue_outbox([NewOutbox(aid, "web", OutboxKind.SYNC), NewOutbox(aid, "web", OutboxKind.SYNC)], NOW)
    await store.enqueue_outbox([NewOutbox(aid, "web", OutboxKind.REMIND, {"number": 1})], NOW)
    kinds = [o.kind for o in await store.list_outbox(aid)]
    assert kinds == [OutboxKind.POST, OutboxKind.SYNC, OutboxKind.REMIND]
    assert (await store.list_outbox(aid))[2].data == {"number": 1}


# ---------------------------------------------------------------- resume jobs
async def _decide_with_job(store: Store) -> str:
    a = make_approval()
    await store.create_approval(a, [], [])
    assert await store.save_transition(_decided(a), a.version, [], [], NewJob(a.id, "agent"))
    return a.id


async def test_job_claim_finish_extend_requeue(store_factory: StoreFactory) -> None:
    a, b = await store_factory(), await store_factory()
    aid = await _decide_with_job(a)
    [job] = [c.job for c in await a.claim_launches(NOW, "A", LEASE, 5)]
    assert (job.status, job.claimed_by, job.attempts) == (JobStatus.RUNNING, "A", 1)
    assert await b.claim_launches(NOW + timedelta(seconds=30), "B", LEASE, 5) == []
    assert await a.extend_job_lease(job.id, "A", NOW + timedelta(minutes=5), claim=1)
    assert not await b.extend_job_lease(job.id, "B", NOW + timedelta(minutes=5), claim=1)
    assert await b.claim_launches(NOW + timedelta(seconds=90), "B", LEASE, 5) == []  # extended
    [again] = [c.job for c in await b.claim_launches(NOW + timedelta(minutes=6), "B", LEASE, 5)]  # the lease ran out
    assert (again.claimed_by, again.attempts) == ("B", 2)
    assert not await a.finish_job(job.id, "A", claim=1, now=NOW, status=JobStatus.SUCCEEDED)
    event = NewEvent(aid, "job_failed", NOW)
    assert await b.finish_job(
        again.id, "B", claim=2, now=NOW, status=JobStatus.FAILED, error="exit 1", output_tail="boom", events=[event]
    )
    assert [j.approval_id for j in await a.list_jobs(JobStatus.FAILED)] == [aid]
    assert await a.list_jobs(JobStatus.QUEUED) == []
    assert await a.requeue_job(aid, NOW, [NewEvent(aid, "job_requeued", NOW)])
    assert not await a.requeue_job(aid, NOW, [])  # only a failed job goes back
    stored = await a.get_job(aid)
    assert stored is not None and (stored.status, stored.attempts, stored.output_tail) == (JobStatus.QUEUED, 0, "boom")
    # each claim appended its attempt's job_started, by the claimer, in its own transaction
    assert [(e.kind, e.actor, e.data) for e in await a.list_events(aid)] == [
        ("job_started", "A", {"attempt": 1}),
        ("job_started", "B", {"attempt": 2}),
        ("job_failed", None, {}),
        ("job_requeued", None, {}),
    ]


async def test_a_claim_of_the_same_owner_again_fences_off_its_earlier_claim(store: Store) -> None:
    """A runner whose lease ran out (its renewals failing) may claim the job again itself: the
    earlier claim's task must then neither renew nor record, or both would launch the step."""
    await _decide_with_job(store)
    [first] = [c.job for c in await store.claim_launches(NOW, "A", LEASE, 5)]
    [second] = [c.job for c in await store.claim_launches(NOW + LEASE + timedelta(seconds=1), "A", LEASE, 5)]
    assert (first.id, first.attempts, second.attempts) == (second.id, 1, 2)
    later = NOW + timedelta(minutes=5)
    assert not await store.extend_job_lease(first.id, "A", later, claim=first.claims)
    assert not await store.finish_job(first.id, "A", claim=first.claims, now=later, status=JobStatus.SUCCEEDED)
    assert await store.extend_job_lease(second.id, "A", later, claim=second.claims)
    assert await store.finish_job(second.id, "A", claim=second.claims, now=later, status=JobStatus.SUCCEEDED)


async def test_a_stale_claim_is_fenced_off_after_an_operator_retry(store: Store) -> None:
    """A's claim (attempt 1) stalls past its lease; B claims (attempt 2) and fails for good; an
    operator retries the job (attempts back to 0) and A claims it again: attempt 1 once more. The
    stale attempt-1 task, whose step was still running, must neither renew nor record the new
    claim's outcome (else it records for a step it did not run, and the job is launched again
    while the new claim's step still runs): claims are fenced by their number, which no retry
    resets."""
    aid = await _decide_with_job(store)
    [stale] = [c.job for c in await store.claim_launches(NOW, "A", LEASE, 5)]
    later = NOW + LEASE + timedelta(seconds=1)
    [b] = [c.job for c in await store.claim_launches(later, "B", LEASE, 5)]
    assert await store.finish_job(b.id, "B", claim=b.claims, now=later, status=JobStatus.FAILED, error="exit 3")
    assert await store.requeue_job(aid, later, [NewEvent(aid, "job_requeued", later)])
    [fresh] = [c.job for c in await store.claim_launches(later, "A", LEASE, 5)]
    assert (stale.attempts, b.attempts, fresh.attempts, fresh.claimed_by) == (1, 2, 1, "A")
    assert (stale.claims, b.claims, fresh.claims) == (1, 2, 3)
    end = later + timedelta(seconds=10)
    renewed = await store.extend_job_lease(stale.id, "A", end, claim=stale.claims)
    recorded = await store.finish_job(stale.id, "A", claim=stale.claims, now=end, status=JobStatus.SUCCEEDED)
    assert (renewed, recorded) == (False, False)


async def test_a_claim_starts_each_job_it_takes_and_nothing_else(store: Store) -> None:
    ids = [await _decide_with_job(store) for _ in range(3)]
    claimed = await store.claim_launches(NOW, "A", LEASE, 2)
    assert await store.claim_launches(NOW, "B", LEASE, 5) != []  # the third
    assert await store.claim_launches(NOW, "C", LEASE, 5) == []  # nothing due: no event either
    started = {aid: [(e.actor, e.at, e.data) for e in await store.list_events(aid)] for aid in ids}
    assert sorted(started.values()) == [
        [("A", NOW, {"attempt": 1})],
        [("A", NOW, {"attempt": 1})],
        [("B", NOW, {"attempt": 1})],
    ]
    assert {aid for aid, evs in started.items() if evs[0][0] == "A"} == {c.job.approval_id for c in claimed}


async def test_a_claimed_launch_carries_the_approval_and_its_runs_journal(store: Store) -> None:
    aid = await _decide_with_job(store)
    a = await store.get_approval(aid)
    assert a is not None
    step = StepRecord(a.run_id, "research", StepStatus.SUCCEEDED, {"rows": 3}, 1, NOW, NOW + timedelta(seconds=1))
    await store.record_step(step, namespace=a.namespace)
    other_ns = "agent:else" if a.namespace != "agent:else" else ""
    await store.record_step(StepRecord(a.run_id, "theirs", StepStatus.SUCCEEDED, 1, 1, NOW, NOW), namespace=other_ns)
    await store.record_step(StepRecord("other-run", "x", StepStatus.SUCCEEDED, 1, 1, NOW, NOW), namespace=a.namespace)
    b = make_approval(run_id="run-bare")  # a run with no journal yet
    await store.create_approval(b, [], [])
    assert await store.save_transition(_decided(b), b.version, [], [], NewJob(b.id, "agent"))
    bare = b.id
    launches = {c.job.approval_id: c for c in await store.claim_launches(NOW, "A", LEASE, 5)}
    assert set(launches) == {aid, bare}
    job, approval, steps = launches[aid]
    assert (job.status, job.claimed_by, job.attempts) == (JobStatus.RUNNING, "A", 1)
    assert approval == a
    assert [(s.name, s.output) for s in steps] == [("research", {"rows": 3})]  # its run, in its namespace only
    assert launches[bare].journal == [] and launches[bare].approval is not None
    # leased: another claimer gets nothing; each job has its job_started
    assert await store.claim_launches(NOW, "B", LEASE, 5) == []
    assert [(e.actor, e.data) for e in await store.list_events(aid)] == [("A", {"attempt": 1})]


async def test_finished_job_is_not_claimed_again(store: Store) -> None:
    aid = await _decide_with_job(store)
    [job] = [c.job for c in await store.claim_launches(NOW, "A", LEASE, 5)]
    assert await store.finish_job(job.id, "A", claim=job.claims, now=NOW, status=JobStatus.SUCCEEDED, output_tail="ok")
    assert await store.claim_launches(NOW + timedelta(days=1), "B", LEASE, 5) == []
    stored = await store.get_job(aid)
    assert stored is not None and stored.status is JobStatus.SUCCEEDED and stored.claimed_by is None


async def test_concurrent_job_claims_take_each_job_once(store_factory: StoreFactory) -> None:
    stores = [await store_factory() for _ in range(3)]
    for _ in range(20):
        await _decide_with_job(stores[0])
    claimed: list[int] = []

    async def worker(i: int) -> None:
        while batch := await stores[i].claim_launches(NOW, f"w{i}", LEASE, 2):
            claimed.extend(c.job.id for c in batch)

    await asyncio.gather(*(worker(i) for i in range(3)))
    assert len(claimed) == len(set(claimed)) == 20


# ---------------------------------------------------------------- journal and inbound
async def test_record_step_first_success_wins(store: Store) -> None:
    def step(status: StepStatus, output: object, attempts: int) -> StepRecord:
        return StepRecord("run-9", "fetch", status, output, attempts, NOW, NOW + timedelta(seconds=1))

    ns = "agent:billing"
    assert (await store.record_step(step(StepStatus.FAILED, None, 1), namespace=ns)).status is StepStatus.FAILED
    won = await store.record_step(step(StepStatus.SUCCEEDED, {"rows": 3}, 2), namespace=ns)
    assert (won.status, won.output, won.attempts) == (StepStatus.SUCCEEDED, {"rows": 3}, 2)
    later = await store.record_step(step(StepStatus.SUCCEEDED, {"rows": 99}, 3), namespace=ns)
    assert later == won
    results = await asyncio.gather(
        *(
            store.record_step(StepRecord("run-9", "send", StepStatus.SUCCEEDED, i, 1, NOW, NOW), namespace=ns)
            for i in range(10)
        )
    )
    assert len({r.output for r in results}) == 1
    assert [s.name for s in await store.get_steps("run-9", namespace=ns)] == ["fetch", "send"]
    (run,) = await store.list_runs()
    assert (run["run_id"], run["namespace"], run["steps"], run["attempts"]) == ("run-9", ns, 2, 3)


async def test_remember_inbound_once(store_factory: StoreFactory) -> None:
    stores = [await store_factory() for _ in range(2)]
    assert await stores[0].remember_inbound("tg:1", NOW)
    assert not await stores[1].remember_inbound("tg:1", NOW)
    results = await asyncio.gather(*(stores[i % 2].remember_inbound("slack:xyz", NOW) for i in range(20)))
    assert sum(results) == 1


async def test_subscribe_is_accepted(store: Store) -> None:
    """Every backend takes a subscriber (SQLite ignores it; PostgreSQL is tested in test_notify)."""
    await store.subscribe(lambda topic, payload: None)
    await _create(store)


# ---------------------------------------------------------------- prompts (migration v2)
async def test_prompts_are_taken_once_by_their_owner(store_factory: StoreFactory) -> None:
    a, b = await store_factory(), await store_factory()
    (aid,) = await _create(a)
    prompt = Prompt("telegram:1:99", aid, "telegram:7", "reject_reason", NOW, NOW + timedelta(minutes=5))
    await a.save_prompt(prompt.__class__(prompt.key, aid, "telegram:8", "reject_reason", NOW, NOW))
    await a.save_prompt(prompt)  # the same key replaces
    assert await b.take_prompt(prompt.key, "telegram:8", NOW) is None  # not theirs
    results = await asyncio.gather(*((a, b)[i % 2].take_prompt(prompt.key, "telegram:7", NOW) for i in range(10)))
    assert [r for r in results if r is not None] == [prompt]
    await a.save_prompt(prompt)
    assert await a.take_prompt(prompt.key, "telegram:7", NOW + timedelta(minutes=5)) is None  # expired
    assert await a.take_prompt(prompt.key, "telegram:7", NOW) is None  # and dropped on the way


async def test_a_card_posted_in_the_creating_commit_is_recorded_as_the_outbox_would(store: Store) -> None:
    a = make_approval(channels=("web", "telegram:1"))
    posted = NewOutbox(a.id, "web", OutboxKind.POST, ref=f"/approvals/{a.id}", posted_at=NOW)
    queued = NewOutbox(a.id, "telegram:1", OutboxKind.POST)
    event = NewEvent(a.id, "card_posted", NOW, channel="web", data={"ref": f"/approvals/{a.id}"})
    await store.create_approval(a, [NewEvent(a.id, "suspended", NOW), event], [posted, queued])
    rows = {r.channel: r for r in await store.list_outbox(a.id)}
    assert (rows["web"].status, rows["web"].attempts, rows["web"].last_error) == (DeliveryStatus.DONE, 1, None)
    assert (rows["telegram:1"].status, rows["telegram:1"].attempts) == (DeliveryStatus.PENDING, 0)
    [card] = await store.list_cards(a.id)
    assert (card.channel, card.ref, card.status, card.posted_at) == (
        "web",
        f"/approvals/{a.id}",
        DeliveryStatus.DONE,
        NOW,
    )
    assert [i.channel for i in await store.claim_outbox(NOW + LEASE, "A", LEASE, 10)] == ["telegram:1"]
    # the unique post row holds: a second post for the web card is refused
    await store.enqueue_outbox([NewOutbox(a.id, "web", OutboxKind.POST)], NOW)
    assert len(await store.list_outbox(a.id)) == 2


async def test_an_uncertain_post_is_adopted_once_and_can_be_requeued(store: Store) -> None:
    address = "telegram:-100"
    (approval_id,) = await _create(store, channels=(address,))
    assert not await store.requeue_post(approval_id, address, NOW, [])  # still pending: nothing to requeue
    (item,) = await store.claim_outbox(NOW, "A", LEASE, 10)
    unknown = CardUpdate(address, None, DeliveryStatus.UNCERTAIN, "no answer")
    assert await store.finish_outbox(item.id, "A", now=NOW, status=DeliveryStatus.UNCERTAIN, card=unknown)
    assert await store.claim_outbox(NOW + timedelta(hours=1), "A", LEASE, 10) == []  # never retried by itself
    assert [(c.approval_id, c.status) for c in await store.cards_needing_attention()] == [
        (approval_id, DeliveryStatus.UNCERTAIN)
    ]

    resend = NewEvent(approval_id, "post_resend", NOW, "cli", address)
    assert await store.requeue_post(approval_id, address, NOW, [resend])
    assert not await store.requeue_post(approval_id, address, NOW, [resend])  # pending again: once
    (again,) = await store.claim_outbox(NOW, "B", LEASE, 10)
    assert again.id == item.id and again.attempts == 0 and again.kind is OutboxKind.POST
    assert [e.kind for e in await store.list_events(approval_id)].count("post_resend") == 1

    adopted = NewEvent(approval_id, "card_adopted", NOW, None, address)
    assert await store.adopt_card(approval_id, address, "-100:7", NOW, [adopted])
    assert not await store.adopt_card(approval_id, address, "-100:8", NOW, [adopted])  # one card is recorded
    card = await store.get_card(approval_id, address)
    assert card is not None and card.ref == "-100:7" and card.status is DeliveryStatus.DONE and card.error is None
    assert [e.kind for e in await store.list_events(approval_id)].count("card_adopted") == 1
    assert await store.cards_needing_attention() == []


async def test_only_given_up_events_are_requeued_once_with_their_resend_time(store: Store) -> None:
    (approval_id,) = await _create(store, channels=())  # no card: the events alone
    docs = [{"id": f"evt_{n}", "time": NOW.isoformat()} for n in (1, 2)]
    await store.enqueue_outbox([NewOutbox(approval_id, "webhook:siem", OutboxKind.EVENT, d) for d in docs], NOW)
    first, second = [r for r in await store.list_outbox(approval_id) if r.kind is OutboxKind.EVENT]
    resend = NewEvent(approval_id, "event_resend", NOW, "operator:test", "webhook:siem", {"events": ["evt_1"]})
    assert await store.requeue_events([first.id, second.id], NOW, [resend]) == 0  # pending: nothing, no event
    (claimed,) = await store.claim_outbox(NOW, "A", LEASE, 10)  # the second waits for the first
    assert claimed.id == first.id
    assert await store.finish_outbox(first.id, "A", now=NOW, status=DeliveryStatus.FAILED, error="HTTP 500")
    later = NOW + timedelta(hours=2)
    assert await store.requeue_events([first.id, second.id], later, [resend]) == 1  # the given-up one alone
    assert await store.requeue_events([first.id], later, [resend]) == 0  # pending again: once
    again = {r.id: r for r in await store.list_outbox(approval_id)}[first.id]
    assert (again.status, again.attempts, again.last_error, again.resent_at) == (DeliveryStatus.PENDING, 0, None, later)
    assert again.data == docs[0] and second.resent_at is None  # the same document, never resent
    assert [e.kind for e in await store.list_events(approval_id)].count("event_resend") == 1
    (claimed,) = await store.claim_outbox(later, "B", LEASE, 10)  # still first, the second behind it
    assert claimed.id == first.id


async def test_a_press_may_adopt_a_card_before_any_card_row_exists(store: Store) -> None:
    (approval_id,) = await _create(store, channels=("telegram:-100",))
    assert await store.adopt_card(approval_id, "telegram:-100", "-100:5", NOW)
    card = await store.get_card(approval_id, "telegram:-100")
    assert card is not None and card.ref == "-100:5" and card.posted_at is not None


async def test_a_card_moves_only_from_the_ref_it_had(store: Store) -> None:
    (approval_id,) = await _create(store, channels=("telegram:-100",))
    address = "telegram:-100"
    assert not await store.move_card(approval_id, address, "-100:5", "-200:5", NOW)  # no card yet
    assert await store.adopt_card(approval_id, address, "-100:5", NOW)
    moved = NewEvent(approval_id, "card_moved", NOW, None, address, {"from": "-100:5", "ref": "-200:5"})
    assert not await store.move_card(approval_id, address, "-100:9", "-200:9", NOW, [moved])  # another ref
    assert await store.move_card(approval_id, address, "-100:5", "-200:5", NOW, [moved])
    card = await store.get_card(approval_id, address)
    assert card is not None and card.ref == "-200:5" and card.status is DeliveryStatus.DONE
    assert [e.kind for e in await store.list_events(approval_id)].count("card_moved") == 1


async def test_prune_drops_old_inbound_marks_and_expired_prompts_only(store: Store) -> None:
    old, recent = NOW - timedelta(days=3), NOW - timedelta(hours=1)
    for i in range(7):
        assert await store.remember_inbound(f"telegram:update:{i}", old)
    assert await store.remember_inbound("telegram:update:new", recent)
    await store.save_prompt(Prompt("tg:1:2", "a", "telegram:1", "reject_reason", old, NOW - timedelta(minutes=1)))
    await store.save_prompt(Prompt("tg:1:3", "a", "telegram:1", "reject_reason", NOW, NOW + timedelta(minutes=9)))
    cutoff = NOW - timedelta(days=2)
    assert await store.prune(NOW, cutoff, 5) == 6  # a slice of 5 old marks, and the expired prompt
    assert await store.prune(NOW, cutoff, 5) == 2
    assert await store.prune(NOW, cutoff, 5) == 0
    assert await store.remember_inbound("telegram:update:0", NOW)  # forgotten: it could be stored again
    assert not await store.remember_inbound("telegram:update:new", NOW)  # the recent mark is kept
    assert await store.take_prompt("tg:1:3", "telegram:1", NOW) is not None  # the live prompt is kept


# ---------------------------------------------------------------- principals (migration v11)
async def test_an_approval_keeps_its_agent_and_lists_filter_by_it(store: Store) -> None:
    mine = make_approval(agent="agent:billing")
    theirs = make_approval(agent="agent:mail", run_id="run-2")
    legacy = make_approval(run_id="run-3")  # before v11: no agent
    for a in (mine, theirs, legacy):
        await store.create_approval(a, [], [])
    assert (await store.get_approval(mine.id)) == mine and mine.agent == "agent:billing"
    assert [a.id for a in await store.list_approvals(agent="agent:billing")] == [mine.id]
    assert await store.list_approvals(agent="agent:billing", run_id="run-2") == []
    assert {a.id for a in await store.list_approvals()} == {mine.id, theirs.id, legacy.id}
    for a in (mine, theirs):
        await store.save_transition(_decided(a), a.version, [], job=NewJob(a.id, "agent"))
    assert [j.approval_id for j in await store.list_jobs(agent="agent:mail")] == [theirs.id]
    assert [j.approval_id for j in await store.list_jobs(JobStatus.QUEUED, agent="agent:billing")] == [mine.id]
    assert await store.list_jobs(JobStatus.FAILED, agent="agent:billing") == []
    assert len(await store.list_jobs()) == 2


async def test_run_ids_and_keys_are_per_agent_even_in_a_race(store_factory: StoreFactory) -> None:
    """Four agents (and no agent) suspend with the same run id and key at once, from several
    replicas: each gets its own approval, each replay its own namespace's, none another's."""
    stores = [await store_factory() for _ in range(4)]
    creators = ["agent:a0", "agent:a1", "agent:a2", "agent:a3", None, "operator:alice"]
    attempts = [(c, stores[i % 4]) for i, c in enumerate(creators * 3)]
    results = await asyncio.gather(
        *(s.create_approval(make_approval(key="k-same", run_id="run-x", agent=c), [], []) for c, s in attempts)
    )
    won = {c: a for (c, _), (a, created) in zip(attempts, results, strict=True) if created}
    assert len(won) == 5 and {"agent:a0", "agent:a1", "agent:a2", "agent:a3"} < set(won)  # and one of no agent
    by_namespace = {namespace_of(c): a.id for (c, _), (a, _) in zip(attempts, results, strict=True)}
    assert len(set(by_namespace.values())) == len(by_namespace) == 5  # no agent: one, shared
    for (c, _), (a, _) in zip(attempts, results, strict=True):
        assert a.id == by_namespace[namespace_of(c)] and a.namespace == namespace_of(c)
    assert await stores[1].run_namespaces("run-x") == ["", "agent:a0", "agent:a1", "agent:a2", "agent:a3"]
    assert await stores[2].run_namespaces("run-none") == []


async def test_a_run_id_journals_apart_per_agent(store: Store) -> None:
    for ns, output in (("agent:billing", 1), ("agent:mail", 2), ("", 3)):
        await store.record_step(StepRecord("run-j", "fetch", StepStatus.SUCCEEDED, output, 1, NOW, NOW), namespace=ns)
    for ns, output in (("agent:billing", 1), ("agent:mail", 2), ("", 3)):
        assert [s.output for s in await store.get_steps("run-j", namespace=ns)] == [output]
    assert await store.get_steps("run-j", namespace="agent:other") == []
    assert await store.run_namespaces("run-j") == ["", "agent:billing", "agent:mail"]
    assert {(r["run_id"], r["namespace"]) for r in await store.list_runs()} == {
        ("run-j", "agent:billing"),
        ("run-j", "agent:mail"),
        ("run-j", ""),
    }


async def test_web_sessions_are_revoked_one_by_one_or_by_user(store: Store) -> None:
    later = NOW + timedelta(hours=12)
    for sid, user in (("s1", "alice"), ("s2", "alice"), ("s3", "bob"), ("s4", "carol")):
        await store.create_session(sid, user, NOW, later)
    assert await store.session_user("s1", NOW) == "alice"
    assert await store.session_user("nope", NOW) is None
    assert await store.session_user("s1", later) is None  # expired
    assert await store.delete_session("s1") and not await store.delete_session("s1")
    assert await store.session_user("s1", NOW) is None and await store.session_user("s2", NOW) == "alice"
    assert await store.delete_sessions({"alice", "bob"}) == 1  # carol left the config
    assert await store.session_user("s4", NOW) is None and await store.session_user("s3", NOW) == "bob"
    assert await store.prune(later, NOW - timedelta(days=2), 100) == 2  # the expired sessions go
    assert await store.session_user("s2", NOW) is None


async def test_a_person_lists_and_ends_only_their_own_web_sessions(store: Store) -> None:
    later, old = NOW + timedelta(hours=12), NOW - timedelta(hours=1)
    for sid, user, at in (("s1", "alice", old), ("s2", "alice", NOW), ("s3", "alice", NOW), ("s4", "bob", NOW)):
        await store.create_session(sid, user, at, later)
    await store.create_session("s5", "alice", old, NOW)  # expired
    assert [s.id for s in await store.user_sessions("alice", NOW)] == ["s2", "s3", "s1"]  # newest first
    (bobs,) = await store.user_sessions("bob", NOW)
    assert (bobs.id, bobs.created_at, bobs.expires_at) == ("s4", NOW, later)
    assert not await store.delete_user_session("alice", "s4")  # bob's: left alone
    assert await store.session_user("s4", NOW) == "bob"
    assert await store.delete_user_session("alice", "s1") and not await store.delete_user_session("alice", "s1")
    assert await store.delete_other_sessions("alice", "s2") == 2  # s3, and the expired s5
    assert [s.id for s in await store.user_sessions("alice", NOW)] == ["s2"]
    assert await store.session_user("s4", NOW) == "bob"


async def test_a_posts_answer_for_the_card_a_press_adopted_records_no_second_card_event(store: Store) -> None:
    """The press came before the post's answer was recorded and adopted the card; the answer then
    names the same message: the outbox item is done, the card stays the press's, and the trail has
    its `card_adopted` only (two events would say the card was recorded twice)."""
    address = "telegram:-100"
    (approval_id,) = await _create(store, channels=(address,))
    (item,) = await store.claim_outbox(NOW, "A", LEASE, 10)
    adopted = NewEvent(approval_id, "card_adopted", NOW, None, address, {"ref": "-100:7"})
    assert await store.adopt_card(approval_id, address, "-100:7", NOW, [adopted])
    posted = NewEvent(approval_id, "card_posted", NOW, None, address, {"ref": "-100:7"})
    card = CardUpdate(address, "-100:7", DeliveryStatus.DONE)
    assert await store.finish_outbox(item.id, "A", now=NOW, status=DeliveryStatus.DONE, card=card, events=[posted])
    (row,) = await store.list_outbox(approval_id)
    assert row.status is DeliveryStatus.DONE
    stored = await store.get_card(approval_id, address)
    assert stored is not None and (stored.ref, stored.status) == ("-100:7", DeliveryStatus.DONE)
    kinds = [e.kind for e in await store.list_events(approval_id)]
    assert kinds.count("card_adopted") == 1 and "card_posted" not in kinds
    # another message (a copy of an earlier attempt was pressed): the post's answer is recorded
    (other,) = await _create(store, channels=(address,))
    (item2,) = await store.claim_outbox(NOW, "A", LEASE, 10)
    assert await store.adopt_card(other, address, "-100:8", NOW)
    posted2 = NewEvent(other, "card_posted", NOW, None, address, {"ref": "-100:9"})
    card2 = CardUpdate(address, "-100:9", DeliveryStatus.DONE)
    assert await store.finish_outbox(item2.id, "A", now=NOW, status=DeliveryStatus.DONE, card=card2, events=[posted2])
    assert "card_posted" in [e.kind for e in await store.list_events(other)]
