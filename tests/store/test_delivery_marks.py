"""An inbound delivery's de-duplication marks committed with what it writes (a press's decision),
and the reads of an approval in one snapshot: on SQLite and on PostgreSQL, with several stores on
one database standing for replicas."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from gateway.core.models import Decision, DeliveryStatus, NewEvent, NewOutbox, OutboxKind, Outcome, Status
from gateway.store import CardUpdate, OutboxResult, SeenBefore, Store, ViewOf
from tests.store.conftest import NOW, StoreFactory, make_approval

MARKS = ("kind:update:1", "kind:callback:a")


async def _waiting(store: Store) -> str:
    a = make_approval(channels=("web", "chat:1"))
    await store.create_approval(a, [NewEvent(a.id, "suspended", NOW)], [])
    return a.id


async def test_marks_commit_with_the_transition_and_refuse_a_second(store: Store) -> None:
    approval_id = await _waiting(store)
    a = await store.get_approval(approval_id)
    assert a is not None
    decided = a.evolve(
        status=Status.APPROVED, decision=Decision(Outcome.APPROVE, "web:alice", NOW), version=a.version + 1
    )
    assert await store.save_transition(decided, a.version, [NewEvent(a.id, "approved", NOW)], marks=MARKS)
    assert not await store.remember_inbound(MARKS[0], NOW) and not await store.remember_inbound(MARKS[1], NOW)

    again = decided.evolve(version=decided.version + 1)
    with pytest.raises(SeenBefore):  # nothing written: the version did not move
        await store.save_transition(again, decided.version, [NewEvent(a.id, "comment_added", NOW)], marks=MARKS)
    stored = await store.get_approval(a.id)
    assert stored is not None and stored.version == decided.version
    assert [e.kind for e in await store.list_events(a.id)] == ["suspended", "approved"]


async def test_one_of_two_concurrent_deliveries_commits(store_factory: StoreFactory) -> None:
    """Two replicas handle the same delivery at once, each with its own transition of a
    different approval: the marks let exactly one commit."""
    stores = [await store_factory(), await store_factory()]
    ids = [await _waiting(stores[0]), await _waiting(stores[0])]

    async def decide(store: Store, approval_id: str) -> bool:
        a = await store.get_approval(approval_id)
        assert a is not None
        after = a.evolve(status=Status.REJECTED, decision=Decision(Outcome.REJECT, "web:a", NOW), version=a.version + 1)
        try:
            return await store.save_transition(after, a.version, [NewEvent(a.id, "rejected", NOW)], marks=MARKS)
        except SeenBefore:
            return False

    won = await asyncio.gather(*(decide(s, i) for s, i in zip(stores, ids, strict=True)))
    assert sorted(won) == [False, True]


async def test_remember_delivery_records_every_mark_and_the_events_once(store: Store) -> None:
    approval_id = await _waiting(store)
    denied = [NewEvent(approval_id, "denied", NOW, "web:mallory")]
    assert await store.remember_delivery(MARKS, NOW, denied)
    assert not await store.remember_delivery(MARKS, NOW, denied)
    assert not await store.remember_delivery((MARKS[1], "kind:update:2"), NOW, denied)  # one mark seen: a redelivery
    assert not await store.remember_inbound("kind:update:2", NOW)  # the new one is kept all the same
    assert [e.kind for e in await store.list_events(approval_id)] == ["suspended", "denied"]


async def test_approval_views_read_cards_and_events_in_one_snapshot(store: Store) -> None:
    approval_id, other = await _waiting(store), await _waiting(store)
    await store.adopt_card(approval_id, "chat:1", "1:2", NOW)
    view, plain, no_card, missing = await store.approval_views(
        [ViewOf(approval_id, "chat:1", events=True), ViewOf(other), ViewOf(other, "web"), ViewOf("gone", "chat:1")]
    )
    assert view.approval == await store.get_approval(approval_id)
    assert view.card is not None and view.card.ref == "1:2" and view.card.status is DeliveryStatus.DONE
    assert view.events is not None and [e.kind for e in view.events] == ["suspended"]
    assert plain.approval == await store.get_approval(other) and plain.card is None and plain.events is None
    assert no_card.approval is not None and no_card.card is None
    assert missing == (None, None, None)
    assert await store.approval_views([ViewOf(other)]) == [plain]  # one approval alone: one statement
    assert await store.approval_views([]) == []


async def test_finish_outboxes_records_each_result_its_owner_still_holds(store: Store) -> None:
    approval_id = await _waiting(store)
    await store.enqueue_outbox([NewOutbox(approval_id, "chat:1", OutboxKind.POST)], NOW)
    await store.enqueue_outbox([NewOutbox(approval_id, "web", OutboxKind.POST)], NOW)
    claimed = await store.claim_outbox(NOW, "me", timedelta(seconds=60), 10)
    assert len(claimed) == 2
    posted = CardUpdate("chat:1", "1:9", DeliveryStatus.DONE)
    done = NewEvent(approval_id, "card_posted", NOW, channel="chat:1")
    results = [
        OutboxResult(claimed[0].id, "me", NOW, DeliveryStatus.DONE, card=posted, events=[done]),
        OutboxResult(claimed[1].id, "not me", NOW, DeliveryStatus.DONE, events=[done]),  # lost its lease: nothing
    ]
    assert await store.finish_outboxes(results) == [True, False]
    card = await store.get_card(approval_id, "chat:1")
    assert card is not None and card.ref == "1:9"
    assert [e.kind for e in await store.list_events(approval_id)] == ["suspended", "card_posted"]
    assert [r.status for r in await store.list_outbox(approval_id)] == [DeliveryStatus.DONE, DeliveryStatus.PENDING]
