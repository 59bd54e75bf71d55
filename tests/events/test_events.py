"""Signed outbound events, end to end on both backends: a transition commits its event rows, the
outbox signs and POSTs them to a real receiver that verifies each one with `standardwebhooks`,
in order per approval, retrying after `Retry-After` or with backoff, until it gives up (which
the dashboard shows)."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from gateway.core.events import EventKind
from gateway.core.models import JobStatus, NewEvent, NewOutbox, OutboxKind, Outcome
from gateway.runtime import Runtime
from gateway.service.approvals import SuspendRequest
from gateway.testing import TEST_API_KEY, TEST_OPERATOR_KEY, FakeClock, make_settings
from tests.events.support import Receiver, types

OPERATOR = {"Authorization": f"Bearer {TEST_OPERATOR_KEY}"}
AGENT = {"Authorization": f"Bearer {TEST_API_KEY}"}


async def _suspend(rt: Runtime, **kw: Any) -> str:
    req = SuspendRequest(kw.pop("run_id", "run-1"), kw.pop("step", "charge"), "Charge ACME", **kw)
    approval, _ = await rt.service.suspend(req)
    return approval.id


async def test_each_event_is_a_signed_cloudevent(rt: Runtime, receiver: Receiver) -> None:
    args = {"amount": 4200, "email": "alice@example.com"}
    approval_id = await _suspend(rt, args=args, state={"secret": "s3cr3t"}, worker="agent")
    await rt.service.decide(approval_id, Outcome.APPROVE, "web:alice", channel="web", comment="ok")
    await rt.outbox.drain()
    assert [r.answered for r in receiver.received] == [204, 204]  # both verified by the library
    requested, decided = receiver.accepted
    assert types(receiver.accepted) == ["approval.requested", "approval.decided"]
    for event, raw in zip(receiver.accepted, receiver.received, strict=True):
        assert event["specversion"] == "1.0" and event["subject"] == approval_id
        assert event["source"] == rt.settings.server.public_url.rstrip("/")
        assert event["datacontenttype"] == "application/json" and event["time"].endswith("Z")
        assert raw.headers["webhook-id"] == event["id"] and event["id"].startswith("evt_")
        assert raw.headers["Content-Type"].startswith("application/cloudevents+json")
        # no secret, token or raw argument leaves in an event
        assert b"s3cr3t" not in raw.body and b"alice@example.com" not in raw.body
        assert receiver.secret.encode() not in raw.body
    assert requested["data"]["status"] == "waiting_approval" and requested["data"]["decided_by"] is None
    assert requested["data"]["args"]["amount"] == 4200 and requested["data"]["args"]["email"] != args["email"]
    data = decided["data"]
    assert data["status"] == "approved" and data["decided_by"] == "web:alice"
    assert data["decision"]["outcome"] == "approve" and data["decision"]["comment"] == "ok"
    assert data["run_id"] == "run-1" and data["step"] == "charge" and data["approval_id"] == approval_id


async def test_a_failed_first_try_keeps_the_order_and_the_id(rt: Runtime, receiver: Receiver, clock: FakeClock) -> None:
    receiver.answers = [(503, {})]  # the first request fails
    approval_id = await _suspend(rt)
    await rt.service.decide(approval_id, Outcome.REJECT, "web:alice", channel="web")
    await rt.outbox.drain()
    # requested failed: decided waits for it, though due, instead of overtaking it
    assert [r.answered for r in receiver.received] == [503]
    assert types([r.event for r in receiver.received if r.event]) == ["approval.requested"]
    clock.advance(seconds=2)  # the first retry comes within seconds
    await rt.outbox.drain()
    assert types(receiver.accepted) == ["approval.requested", "approval.decided"]
    first, again = receiver.received[0], receiver.received[1]
    assert first.headers["webhook-id"] == again.headers["webhook-id"]  # receivers de-duplicate on it
    assert first.body == again.body  # the same document, byte for byte
    rows = await rt.store.list_outbox(approval_id)
    events = [r for r in rows if r.channel == "webhook:siem"]
    assert [r.status.value for r in events] == ["done", "done"] and events[0].attempts == 2


async def test_retry_after_in_seconds_is_honoured(rt: Runtime, receiver: Receiver, clock: FakeClock) -> None:
    receiver.answers = [(429, {"Retry-After": "120"})]
    await _suspend(rt)
    await rt.outbox.drain()
    clock.advance(seconds=119)  # the backoff alone would have tried again long before
    await rt.outbox.drain()
    assert len(receiver.received) == 1
    clock.advance(seconds=2)
    await rt.outbox.drain()
    assert [r.answered for r in receiver.received] == [429, 204]


async def test_retry_after_as_an_http_date_is_honoured(rt: Runtime, receiver: Receiver, clock: FakeClock) -> None:
    receiver.answers = [(503, {"Retry-After": format_datetime(clock.now() + timedelta(seconds=90), usegmt=True)})]
    await _suspend(rt)
    await rt.outbox.drain()
    clock.advance(seconds=85)
    await rt.outbox.drain()
    assert len(receiver.received) == 1
    clock.advance(seconds=6)
    await rt.outbox.drain()
    assert [r.answered for r in receiver.received] == [503, 204]


async def test_backoff_grows_to_the_cap_then_gives_up_and_the_dashboard_shows_it(
    events_runtime: Callable[..., Any], receiver: Receiver, clock: FakeClock
) -> None:
    rt, web = await events_runtime(events={"give_up_after": "1h", "max_backoff": "5m"}, web=True)
    receiver.answers, receiver.fresh_only = [(500, {})] * 1000, False  # the clock runs an hour ahead
    approval_id = await _suspend(rt)
    start = clock.now()
    delays = []
    for _ in range(200):
        await rt.outbox.drain()
        (row,) = [r for r in await rt.store.list_outbox(approval_id) if r.channel == "webhook:siem"]
        if row.status.value != "pending":
            break
        delays.append((row.next_attempt_at - clock.now()).total_seconds())
        clock.set(row.next_attempt_at)
    assert row.status.value == "failed" and row.last_error == "HTTP 500 Internal Server Error"
    assert delays[0] <= 1.0 and max(delays) <= 300  # within seconds at first, never beyond the cap
    assert clock.now() - start == timedelta(hours=1)  # the last try is at give_up_after, then it gives up
    events = await rt.store.list_events(approval_id)
    (gave_up,) = [e for e in events if e.kind == "delivery_failed"]
    assert gave_up.channel == "webhook:siem" and gave_up.data["type"] == "dev.hitl-gateway.approval.requested"

    (backlog,) = await rt.webhooks.backlog()
    assert (backlog.name, backlog.pending, backlog.failing, backlog.given_up) == ("siem", 0, 0, 1)
    html = await _dashboard(web)
    assert (
        '<tr data-webhook="siem"><td>siem</td><td>0</td><td>0</td><td>1</td><td>HTTP 500 Internal Server Error</td>'
        in html
    )
    metrics = await (await web.get("/metrics")).text()
    assert 'hitl_webhook_events{state="given_up",webhook="siem"} 1.0' in metrics


async def test_the_dashboard_counts_pending_and_failing(
    events_runtime: Callable[..., Any], receiver: Receiver, clock: FakeClock
) -> None:
    rt, web = await events_runtime(web=True)
    receiver.answers = [(502, {})]
    approval_id = await _suspend(rt)
    await rt.service.decide(approval_id, Outcome.APPROVE, "web:alice", channel="web")
    await rt.outbox.drain()
    (backlog,) = await rt.webhooks.backlog()  # requested failing, decided waiting behind it
    assert (backlog.pending, backlog.failing, backlog.given_up, backlog.last_error) == (1, 1, 0, "HTTP 502 Bad Gateway")
    html = await _dashboard(web)
    assert "Outbound events" in html and "HTTP 502 Bad Gateway" in html
    clock.advance(seconds=2)
    await rt.outbox.drain()
    (backlog,) = await rt.webhooks.backlog()
    assert (backlog.pending, backlog.failing, backlog.given_up, backlog.last_error) == (0, 0, 0, None)


async def test_timeout_escalation_and_kinds(
    events_runtime: Callable[..., Any], receiver: Receiver, clock: FakeClock
) -> None:
    rt = await events_runtime(kinds=["approval.escalated", "approval.timed_out"])
    escalated = await _suspend(rt, policy="esc", run_id="run-e")
    timed_out = await _suspend(rt, policy="fast", run_id="run-t")
    clock.advance(seconds=61)
    await rt.scheduler.tick(clock.now())
    clock.advance(seconds=61)
    await rt.scheduler.tick(clock.now())
    await rt.outbox.drain()
    got = {(e["subject"], e["type"].removeprefix("dev.hitl-gateway.")) for e in receiver.accepted}
    assert got == {
        (escalated, "approval.escalated"),
        (escalated, "approval.timed_out"),
        (timed_out, "approval.timed_out"),
    }
    by_subject = [types([e for e in receiver.accepted if e["subject"] == escalated])]
    assert by_subject == [["approval.escalated", "approval.timed_out"]]  # in order per approval


async def test_a_cancel_is_the_approvals_decision(rt: Runtime, receiver: Receiver) -> None:
    approval_id = await _suspend(rt)
    await rt.service.cancel(approval_id, "operator:test", "not needed")
    await rt.outbox.drain()
    assert types(receiver.accepted) == ["approval.requested", "approval.decided"]
    assert receiver.accepted[1]["data"]["status"] == "cancelled"


async def _dashboard(web: Any) -> str:
    return " ".join((await (await web.get("/dashboard")).text()).split())


async def test_a_job_failure_follows_the_decision(rt: Runtime, receiver: Receiver, clock: FakeClock) -> None:
    approval_id = await _suspend(rt, worker="agent")
    await rt.service.decide(approval_id, Outcome.APPROVE, "web:alice", channel="web")
    ((job, _, _),) = await rt.jobs.claim(clock.now(), "w1", timedelta(minutes=1), 10)
    event = NewEvent(
        approval_id, EventKind.JOB_FAILED, clock.now(), "w1", data={"attempt": 1, "worker": "agent", "error": "exit 3"}
    )
    assert await rt.jobs.finish(
        job.id, "w1", claim=job.claims, now=clock.now(), status=JobStatus.FAILED, error="exit 3", events=[event]
    )
    await rt.outbox.drain()
    assert types(receiver.accepted) == ["approval.requested", "approval.decided", "job.failed"]
    assert receiver.accepted[2]["data"]["job"] == {"worker": "agent", "attempt": 1, "error": "exit 3"}


@pytest.mark.subprocess
async def test_a_worker_run_announces_job_succeeded(rt: Runtime, receiver: Receiver) -> None:
    approval_id = await _suspend(rt, worker="agent")
    await rt.service.decide(approval_id, Outcome.APPROVE, "web:alice", channel="web")
    await rt.worker.drain()  # runs `true`
    await rt.outbox.drain()
    assert types(receiver.accepted) == ["approval.requested", "approval.decided", "job.succeeded"]
    assert {e["subject"] for e in receiver.accepted} == {approval_id}


async def test_an_event_claimed_by_a_crashed_replica_is_sent_once_its_lease_ends(
    rt: Runtime, receiver: Receiver, clock: FakeClock
) -> None:
    approval_id = await _suspend(rt)
    (claimed,) = await rt.store.claim_outbox(clock.now(), "gone", timedelta(seconds=60), 10)  # then it died
    assert claimed.kind.value == "event"
    await rt.outbox.drain()
    assert receiver.received == []  # its lease still holds
    clock.advance(seconds=61)
    await rt.outbox.drain()
    (event,) = receiver.accepted
    assert event["id"] == claimed.data["id"] and event["subject"] == approval_id


async def test_a_given_up_event_lets_the_next_one_go_and_a_removed_webhook_gets_nothing(
    events_runtime: Callable[..., Any], receiver: Receiver, clock: FakeClock
) -> None:
    rt = await events_runtime(events={"give_up_after": "1m", "max_backoff": "30s"})
    receiver.answers = [(500, {})] * 50
    approval_id = await _suspend(rt)
    for _ in range(20):  # requested fails until it is given up, a minute later
        await rt.outbox.drain()
        (row,) = [r for r in await rt.store.list_outbox(approval_id) if r.kind is OutboxKind.EVENT]
        if row.status.value != "pending":
            break
        clock.set(row.next_attempt_at)
    assert row.status.value == "failed"
    receiver.answers = []
    await rt.service.decide(approval_id, Outcome.APPROVE, "web:alice", channel="web")
    await rt.outbox.drain()
    assert types(receiver.accepted) == ["approval.decided"]
    await rt.stop()

    other = await events_runtime(name="renamed")  # the same store, the webhook now named otherwise
    second = await _suspend(other, run_id="run-2")
    rows = [r for r in await other.store.list_outbox(second) if r.kind.value == "event"]
    assert [r.channel for r in rows] == ["webhook:renamed"]
    await other.store.enqueue_outbox(
        [NewOutbox(second, "webhook:siem", OutboxKind.EVENT, dict(rows[0].data))], clock.now()
    )
    await other.outbox.drain()
    (orphan,) = [r for r in await other.store.list_outbox(second) if r.channel == "webhook:siem"]
    assert orphan.status.value == "failed" and orphan.last_error == "the webhook is no longer configured"
    backlog = await other.webhooks.backlog()
    assert [(b.name, b.given_up) for b in backlog] == [("renamed", 0), ("siem", 2)]


async def test_the_running_outbox_sends_at_once(store_url: str, receiver: Receiver) -> None:
    """With the background loops on (the system clock): a commit wakes the outbox, no test drain."""
    hook = {"url": receiver.url, "secret": receiver.secret, "name": "siem"}
    rt = Runtime(make_settings(store_url, {"events": {"webhooks": [hook]}}), owner="bg")
    await rt.start()
    try:
        await _suspend(rt)
        await asyncio.wait_for(receiver.arrived.wait(), 10)
    finally:
        await rt.stop()
    assert types(receiver.accepted) == ["approval.requested"]


async def test_a_rule_that_decides_at_suspend_sends_requested_then_decided(
    events_runtime: Callable[..., Any], receiver: Receiver
) -> None:
    rule = {"name": "small", "when": "args.amount < 100", "then": "allow", "reason": "small amounts"}
    rt = await events_runtime(more={"rule": [rule]})
    approval_id = await _suspend(rt, args={"amount": 5})
    await rt.outbox.drain()
    requested, decided = receiver.accepted
    assert types(receiver.accepted) == ["approval.requested", "approval.decided"]
    assert requested["data"]["status"] == "waiting_approval" and decided["data"]["status"] == "approved"
    assert decided["data"]["decided_by"] == "rule:small" and decided["subject"] == approval_id


async def test_two_replicas_keep_each_approvals_order(
    events_runtime: Callable[..., Any], receiver: Receiver, clock: FakeClock
) -> None:
    one, two = await events_runtime(), await events_runtime()
    receiver.answers = [(503, {})] * 3  # a few first tries fail: their successors must wait
    ids = []
    for n in range(6):
        ids.append(await _suspend(one, run_id=f"run-{n}"))
        await two.service.decide(ids[-1], Outcome.APPROVE, "web:alice", channel="web")
    for _ in range(20):
        handled = await asyncio.gather(one.outbox.run_once(), two.outbox.run_once())
        if not any(handled):
            clock.advance(seconds=2)
            if not any(await asyncio.gather(one.outbox.run_once(), two.outbox.run_once())):
                break
    for approval_id in ids:
        mine = [e for e in receiver.accepted if e["subject"] == approval_id]
        assert types(mine) == ["approval.requested", "approval.decided"]  # once each, in order


def _secret(seed: bytes) -> str:
    return "whsec_" + base64.b64encode(seed * (32 // len(seed))).decode()


async def test_a_rotation_signs_with_every_secret_so_old_and_new_receivers_verify(
    events_runtime: Callable[..., Any], receiver: Receiver
) -> None:
    """During a rotation a receiver holds either the new secret or an old one: both verify (the
    specification's library, timestamp included); a secret that is neither does not."""
    old, older, new, other = receiver.secret, _secret(b"older"), _secret(b"new!"), _secret(b"nope")
    rt = await events_runtime(secret=new, previous_secrets=[old, older])
    approval_id = await _suspend(rt)
    await rt.outbox.drain()
    (got,) = receiver.received  # the receiver, still on the old secret, accepted it
    assert got.answered == 204 and got.event is not None and got.event["subject"] == approval_id
    for secret in (new, old, older):
        assert Webhook(secret).verify(got.body, got.headers)["id"] == got.headers["webhook-id"]
    with pytest.raises(WebhookVerificationError):
        Webhook(other).verify(got.body, got.headers)
    # one `v1,<signature>` per secret, space-separated, the current secret's first, then newest first
    at = datetime.fromtimestamp(int(got.headers["webhook-timestamp"]), UTC)
    expected = [Webhook(s).sign(got.headers["webhook-id"], at, got.body) for s in (new, old, older)]
    assert got.headers["webhook-signature"].split(" ") == expected


async def test_after_the_rotation_only_the_new_secret_verifies(
    events_runtime: Callable[..., Any], receiver: Receiver
) -> None:
    old, new = receiver.secret, _secret(b"new!")
    receiver.secret = new  # the receiver switched, and previous_secrets was dropped
    rt = await events_runtime(secret=new)
    await _suspend(rt)
    await rt.outbox.drain()
    (got,) = receiver.received
    assert got.answered == 204 and " " not in got.headers["webhook-signature"]
    with pytest.raises(WebhookVerificationError):
        Webhook(old).verify(got.body, got.headers)


async def _give_up(rt: Runtime, clock: FakeClock, approval_id: str) -> None:
    for _ in range(100):  # every try fails until each event is given up, one after the other
        await rt.outbox.drain()
        rows = [r for r in await rt.store.list_outbox(approval_id) if r.kind is OutboxKind.EVENT]
        tried = [r for r in rows if r.status.value == "pending" and r.attempts]
        if not any(r.status.value == "pending" for r in rows):
            return
        clock.set(max(clock.now(), min((r.next_attempt_at for r in tried), default=clock.now())))
    raise AssertionError("never given up")


async def test_an_operator_sends_a_given_up_event_again_and_it_arrives_once_in_order(
    events_runtime: Callable[..., Any], receiver: Receiver, clock: FakeClock
) -> None:
    rt, api = await events_runtime(events={"give_up_after": "1m", "max_backoff": "30s"}, web=True)
    receiver.answers, receiver.fresh_only = [(500, {})] * 1000, False  # the receiver is down
    approval_id = await _suspend(rt)
    await rt.service.decide(approval_id, Outcome.APPROVE, "web:alice", channel="web")
    await _give_up(rt, clock, approval_id)
    rows = [r for r in await rt.store.list_outbox(approval_id) if r.kind is OutboxKind.EVENT]
    assert [r.status.value for r in rows] == ["failed", "failed"] and receiver.accepted == []
    ids = [r.data["id"] for r in rows]

    receiver.answers = [(503, {})]  # back, but its first answer still fails: the window is fresh
    clock.advance(seconds=5)
    resp = await api.post(f"/v1/approvals/{approval_id}/events/resend", json={"by": "web:ops"}, headers=OPERATOR)
    assert resp.status == 200, await resp.text()
    assert await resp.json() == {"approval_id": approval_id, "webhooks": {"siem": ids}, "status": "pending"}
    await rt.outbox.drain()
    clock.advance(seconds=2)
    await rt.outbox.drain()
    assert [e["id"] for e in receiver.accepted] == ids  # each once, requested before decided
    assert types(receiver.accepted) == ["approval.requested", "approval.decided"]
    for _ in range(3):  # nothing more goes out
        clock.advance(minutes=5)
        await rt.outbox.drain()
    assert len(receiver.accepted) == 2
    rows = [r for r in await rt.store.list_outbox(approval_id) if r.kind is OutboxKind.EVENT]
    assert [r.status.value for r in rows] == ["done", "done"]
    (resend,) = [e for e in await rt.store.list_events(approval_id) if e.kind == "event_resend"]
    assert resend.actor.startswith("operator:") and resend.channel == "webhook:siem"
    assert resend.data == {"events": ids, "on_behalf_of": "web:ops"}
    (backlog,) = await rt.webhooks.backlog()
    assert (backlog.pending, backlog.failing, backlog.given_up) == (0, 0, 0)
    # sent already: nothing left to send again
    again = await api.post(f"/v1/approvals/{approval_id}/events/resend", headers=OPERATOR)
    assert again.status == 409 and (await again.json())["error"]["code"] == "conflict"


async def test_sending_events_again_needs_an_operator_and_a_good_request(
    events_runtime: Callable[..., Any], receiver: Receiver, clock: FakeClock
) -> None:
    rt, api = await events_runtime(events={"give_up_after": "1m", "max_backoff": "30s"}, web=True)
    receiver.answers, receiver.fresh_only = [(500, {})] * 1000, False
    approval_id = await _suspend(rt)
    await _give_up(rt, clock, approval_id)
    url = f"/v1/approvals/{approval_id}/events/resend"
    before = (await rt.store.list_outbox(approval_id), await rt.store.list_events(approval_id))
    refused = [
        (await api.post(url, json={}, headers=AGENT), 403, "operator_required"),
        (await api.post(url, json={"webhook": "nope"}, headers=OPERATOR), 400, "validation_error"),
        (await api.post(url, json={"webhook": 7}, headers=OPERATOR), 400, "validation_error"),
        (await api.post(url, json={"channel": "web"}, headers=OPERATOR), 400, "validation_error"),
        (await api.post(url, data="{", headers=OPERATOR), 400, "invalid_json"),
        (await api.post("/v1/approvals/nope/events/resend", headers=OPERATOR), 404, "not_found"),
    ]
    for resp, status, code in refused:
        assert (resp.status, (await resp.json())["error"]["code"]) == (status, code)
    assert (await rt.store.list_outbox(approval_id), await rt.store.list_events(approval_id)) == before
    await rt.outbox.drain()
    assert receiver.accepted == []
    # the webhook named: its events alone
    resp = await api.post(url, json={"webhook": "siem"}, headers=OPERATOR)
    assert resp.status == 200 and list((await resp.json())["webhooks"]) == ["siem"]
