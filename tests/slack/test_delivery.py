"""Card delivery through the outbox: posted once, 429 waits exactly Retry-After, 5xx and
`ratelimited` retried, `channel_not_found`/`not_in_channel`/`invalid_auth` terminal and visible."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

import pytest

from gateway.core.models import DeliveryStatus, OutboxKind
from tests.conftest import AUTH, OPERATOR, suspend_body
from tests.slack.conftest import CARDS, SlackEnv

SLACK = f"slack:{CARDS}"


async def _post_row(slack: SlackEnv, aid: str) -> tuple[DeliveryStatus, int, float, str | None]:
    rows = [r for r in await slack.rt.store.list_outbox(aid) if r.channel == SLACK and r.kind is OutboxKind.POST]
    (row,) = rows
    delay = (row.next_attempt_at - slack.clock.now()).total_seconds()
    return row.status, row.attempts, delay, row.last_error


async def test_card_is_posted_once_with_metadata(slack: SlackEnv) -> None:
    aid = await slack.suspend()
    ts = await slack.posted(aid)
    again = await slack.client.post(
        "/v1/suspend", json=suspend_body(channels=[SLACK, "web"]), headers=AUTH
    )  # same idempotency key
    assert again.status == 200
    slack.clock.advance(3600)
    await slack.rt.outbox.drain()
    (post,) = slack.fake.calls_to("chat.postMessage")
    assert post["channel"] == CARDS and post["text"] == "Approval needed: Charge ACME $42"
    assert post["metadata"] == {"event_type": "hitl_card", "event_payload": {"approval_id": aid}}
    card = await slack.rt.store.get_card(aid, SLACK)
    assert card is not None and card.ref == f"{CARDS}:{ts}"


async def test_429_waits_exactly_retry_after_then_posts_once(slack: SlackEnv) -> None:
    slack.fake.fail("chat.postMessage", status=429, error="ratelimited", retry_after="7")
    aid = await slack.suspend()
    await slack.rt.outbox.run_once()
    status, attempts, delay, error = await _post_row(slack, aid)
    assert (status, attempts, delay) == (DeliveryStatus.PENDING, 1, 7.0)
    assert error == "slack chat.postMessage: ratelimited"
    slack.clock.advance(6.9)
    assert await slack.rt.outbox.run_once() == 0
    assert len(slack.fake.calls_to("chat.postMessage")) == 1
    slack.clock.advance(0.1)
    await slack.rt.outbox.drain()
    assert len(slack.fake.calls_to("chat.postMessage", ok_only=True)) == 1
    assert len(slack.fake.calls_to("chat.postMessage")) == 2
    retry = [e for e in await slack.rt.store.list_events(aid) if e.kind == "delivery_retry"]
    assert retry[0].data["retry_in"] == 7.0
    assert "card_posted" in await slack.event_kinds(aid)


async def test_update_429_is_retried_after_retry_after(slack: SlackEnv) -> None:
    aid = await slack.suspend()
    await slack.posted(aid)
    slack.fake.fail("chat.update", status=429, retry_after="30")
    await slack.press("UALICE", "approve", aid)
    await slack.rt.outbox.drain()
    assert len(slack.fake.calls_to("chat.update")) == 1
    slack.clock.advance(29)
    await slack.rt.outbox.drain()
    assert len(slack.fake.calls_to("chat.update")) == 1
    slack.clock.advance(1)
    await slack.rt.outbox.drain()
    assert len(slack.fake.calls_to("chat.update", ok_only=True)) == 1


@pytest.mark.parametrize(("status", "error"), [(500, None), (503, None), (200, "ratelimited"), (200, "internal_error")])
async def test_5xx_and_ratelimited_are_retried(slack: SlackEnv, status: int, error: str | None) -> None:
    slack.fake.fail("chat.postMessage", status=status, error=error)
    aid = await slack.suspend()
    await slack.rt.outbox.run_once()
    row_status, attempts, delay, _ = await _post_row(slack, aid)
    assert row_status is DeliveryStatus.PENDING and attempts == 1 and 0 < delay <= 1.0
    slack.clock.advance(1)
    await slack.rt.outbox.drain()
    assert len(slack.fake.calls_to("chat.postMessage", ok_only=True)) == 1
    card = await slack.rt.store.get_card(aid, SLACK)
    assert card is not None and card.status is DeliveryStatus.DONE


@pytest.mark.parametrize("error", ["channel_not_found", "not_in_channel", "invalid_auth", "is_archived"])
async def test_terminal_errors_are_recorded_and_visible(slack: SlackEnv, error: str) -> None:
    slack.fake.fail("chat.postMessage", error=error)
    aid = await slack.suspend()
    await slack.rt.outbox.drain()
    slack.clock.advance(86400)
    await slack.rt.outbox.drain()
    assert len(slack.fake.calls_to("chat.postMessage")) == 1  # never retried
    view = await slack.api(aid)
    cards = {c["channel"]: c for c in view["cards"]}
    assert cards[SLACK]["status"] == "failed" and cards[SLACK]["error"] == f"slack chat.postMessage: {error}"
    events = (await (await slack.client.get(f"/v1/approvals/{aid}/events", headers=AUTH)).json())["items"]
    failed = [e for e in events if e["kind"] == "delivery_failed"]
    assert failed[0]["channel"] == SLACK and error in failed[0]["data"]["error"]
    assert cards["web"]["status"] == "done"  # the other channel is unaffected


async def test_a_wrong_bot_token_is_a_terminal_invalid_auth(slack: SlackEnv) -> None:
    slack.fake.token = "xoxb-rotated"
    aid = await slack.suspend()
    await slack.rt.outbox.drain()
    card = await slack.rt.store.get_card(aid, SLACK)
    assert card is not None and card.status is DeliveryStatus.FAILED
    assert card.error == "slack chat.postMessage: invalid_auth"


async def test_connection_refused_is_transient(slack: SlackEnv) -> None:
    aid = await slack.suspend()
    await slack.fake.stop()
    await slack.rt.outbox.run_once()
    status, _, _, error = await _post_row(slack, aid)
    assert status is DeliveryStatus.PENDING and error is not None and error.startswith("slack chat.postMessage: ")


async def test_reminder_is_a_threaded_reply(slack: SlackEnv) -> None:
    aid = await slack.suspend(policy="remind")
    ts = await slack.posted(aid)
    now = slack.clock.advance(timedelta(minutes=50).total_seconds())
    assert await slack.rt.service.apply_due(aid, now) == "reminded"
    await slack.rt.outbox.drain()
    reminder = slack.fake.calls_to("chat.postMessage")[-1]
    assert (reminder["channel"], reminder["thread_ts"]) == (CARDS, ts)
    assert reminder["text"].startswith(":bell: Reminder:")


async def test_a_post_cut_short_by_a_crash_is_adopted_not_posted_again(slack: SlackEnv) -> None:
    """Slack posted the card but the process died before recording it: the retry finds the
    card by its metadata and adopts it."""
    release = slack.fake.hold("chat.postMessage")
    aid = await slack.suspend()
    first = asyncio.create_task(slack.rt.outbox.run_once())
    await slack.fake.wait_arrived("chat.postMessage")
    first.cancel()  # the process dies with the post in flight
    with contextlib.suppress(asyncio.CancelledError):
        await first
    release.set()
    assert (await slack.rt.store.get_card(aid, SLACK)) is None
    slack.clock.advance(61)  # the dead attempt's lease runs out
    await slack.rt.outbox.drain()
    ((_, ts),) = slack.fake.messages
    card = await slack.rt.store.get_card(aid, SLACK)
    assert card is not None and card.status is DeliveryStatus.DONE and card.ref == f"{CARDS}:{ts}"
    assert len(slack.fake.calls_to("conversations.history")) == 1
    await slack.press("UALICE", "approve", aid)
    await slack.rt.outbox.drain()
    assert slack.fake.calls_to("chat.update")[0]["ts"] == ts
    assert len(slack.fake.messages) == 1


async def test_without_the_history_scope_a_retry_still_posts(slack: SlackEnv) -> None:
    slack.fake.missing_scopes.add("history")
    slack.fake.fail("chat.postMessage", status=429, retry_after="1")
    aid = await slack.suspend()
    await slack.rt.outbox.run_once()
    slack.clock.advance(1)
    await slack.rt.outbox.drain()
    card = await slack.rt.store.get_card(aid, SLACK)
    assert card is not None and card.status is DeliveryStatus.DONE
    assert len(slack.fake.calls_to("chat.postMessage", ok_only=True)) == 1


@pytest.mark.parametrize("source", ["token", "cancel", "timeout"])
async def test_every_decision_source_syncs_the_slack_card(slack: SlackEnv, source: str) -> None:
    resp = await slack.client.post("/v1/suspend", json=suspend_body(channels=[SLACK], policy="remind"), headers=AUTH)
    aid, token = (await resp.json())["id"], (await resp.json())["resume_token"]
    ts = await slack.posted(aid)
    if source == "token":
        resp = await slack.client.post("/v1/resume", json={"token": token, "outcome": "reject", "comment": "no"})
        assert resp.status == 200, await resp.text()
        expected = "*Rejected* by token"
    elif source == "cancel":
        resp = await slack.client.post(f"/v1/approvals/{aid}/cancel", json={"by": "web:ops"}, headers=OPERATOR)
        assert resp.status == 200, await resp.text()
        expected = "*Cancelled* by test (operator)"  # who decided, named with their kind
    else:
        slack.clock.advance(timedelta(hours=1).total_seconds())
        assert await slack.rt.service.apply_due(aid, slack.clock.now()) == "timed_out"
        expected = "*Timed out*: rejected by policy"
    await slack.rt.outbox.drain()
    (update,) = slack.fake.calls_to("chat.update")
    assert update["ts"] == ts and all(b["type"] != "actions" for b in update["blocks"])
    assert expected in str(update["blocks"])
