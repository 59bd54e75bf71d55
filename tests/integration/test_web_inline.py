"""The web inbox's card is the approval row itself: the suspend records it as posted in its own
commit (no outbox round trip), with the same card row, outbox row and `card_posted` event."""

from __future__ import annotations

from typing import Any

from gateway.core.models import DeliveryStatus, OutboxKind, Outcome
from gateway.core.shown import content_hash
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.service.commands import Authority
from gateway.testing import FakeClock
from tests.conftest import AUTH, suspend_body


async def test_the_web_card_is_posted_by_the_suspend_itself(runtime: Runtime, clock: FakeClock) -> None:
    counted = runtime.metrics
    req = SuspendRequest("run-1", "pay", "Pay", channels=("web",), idempotency_key="k1")
    a, created = await runtime.service.suspend(req)
    assert created
    # before any outbox round: the card is there, posted now, and the post row is done
    [card] = await runtime.store.list_cards(a.id)
    assert (card.ref, card.status, card.posted_at) == (f"/approvals/{a.id}", DeliveryStatus.DONE, clock.now())
    [row] = await runtime.store.list_outbox(a.id)
    assert (row.kind, row.status, row.attempts) == (OutboxKind.POST, DeliveryStatus.DONE, 1)
    events = await runtime.store.list_events(a.id)
    posted = {"ref": f"/approvals/{a.id}", "content_hash": content_hash(a)}  # what it showed (docs/audit.md)
    assert [(e.kind, e.channel, e.data) for e in events][1:] == [("card_posted", "web", posted)]
    assert events[1].at == clock.now()
    assert await runtime.outbox.run_once() == 0  # nothing left to deliver
    assert counted.deliveries.labels("web", "post", "ok")._value.get() == 1
    # the same idempotency key: no second card
    again, created = await runtime.service.suspend(req)
    assert again.id == a.id and not created
    assert [e.kind for e in await runtime.store.list_events(a.id)].count("card_posted") == 1
    # a decision still syncs the card through the outbox
    decided = await runtime.service.decide(a.id, Outcome.APPROVE, "operator:ops", authority=Authority.OPERATOR)
    await runtime.outbox.drain()
    synced = [e for e in await runtime.store.list_events(a.id) if e.kind == "card_synced"]
    assert [e.data for e in synced] == [{"status": "approved", "content_hash": content_hash(decided)}]


async def test_over_http_the_card_is_in_the_approval_view_at_once(client: Any) -> None:
    resp = await client.post("/v1/suspend", json=suspend_body(), headers=AUTH)
    assert resp.status == 201
    aid = (await resp.json())["id"]
    view = await (await client.get(f"/v1/approvals/{aid}", headers=AUTH)).json()
    assert [(c["channel"], c["ref"], c["status"]) for c in view["cards"]] == [("web", f"/approvals/{aid}", "done")]
    assert [(d["kind"], d["status"], d["attempts"]) for d in view["deliveries"]] == [("post", "done", 1)]
