"""Cards through the outbox: retries (429, 5xx), terminal errors (403, 400), migration, sync."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest

from adapters.telegram.cli import poll_once, set_webhook
from adapters.telegram.parse import parse_ref
from gateway.core.channels import OutgoingCard
from gateway.core.models import DeliveryStatus, Status
from gateway.runtime import Runtime
from gateway.settings import Settings
from gateway.testing import FakeClock
from tests.conftest import AUTH, OPERATOR, suspend_body
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.telegram.conftest import ALICE, CHAT, SECRET, TG, TOKEN


async def _card_status(tg: TG, approval_id: str) -> dict[str, object]:
    resp = await tg.client.get(f"/v1/approvals/{approval_id}", headers=AUTH)
    body = await resp.json()
    return {"cards": body["cards"], "deliveries": body["deliveries"]}


async def test_429_twice_then_success_waits_exactly_retry_after(tg: TG) -> None:
    tg.api.fail("sendMessage", 429, times=2, retry_after=7)
    approval_id = await tg.suspend()
    start = tg.clock.now()
    assert await tg.rt.outbox.drain() == 1  # failed once, scheduled in 7 s
    tg.clock.advance(6.9)
    assert await tg.rt.outbox.drain() == 0  # not a moment early
    tg.clock.advance(0.1)
    assert await tg.rt.outbox.drain() == 1  # second 429
    tg.clock.advance(7)
    await tg.rt.outbox.drain()
    retries = [e for e in await tg.rt.store.list_events(approval_id) if e.kind == "delivery_retry"]
    assert [e.data["retry_in"] for e in retries] == [7, 7]
    assert [e.at - start for e in retries][1].total_seconds() == 7
    assert len(tg.api.calls_to("sendMessage")) == 3
    card = await tg.rt.store.get_card(approval_id, f"telegram:{CHAT}")
    assert card is not None and card.status is DeliveryStatus.DONE and card.ref is not None
    assert len(tg.api.messages) == 1  # posted once


async def test_500_is_retried_with_backoff(tg: TG) -> None:
    tg.api.fail("sendMessage", 500)
    approval_id = await tg.suspend()
    await tg.rt.outbox.drain()
    retry = [e for e in await tg.rt.store.list_events(approval_id) if e.kind == "delivery_retry"]
    assert len(retry) == 1 and 0.5 <= float(retry[0].data["retry_in"]) <= 1.0  # first backoff step
    tg.clock.advance(1)
    await tg.rt.outbox.drain()
    card = await tg.rt.store.get_card(approval_id, f"telegram:{CHAT}")
    assert card is not None and card.status is DeliveryStatus.DONE


async def test_403_is_terminal_and_visible_in_the_api(tg: TG) -> None:
    tg.api.fail("sendMessage", 403, "Forbidden: bot was kicked from the supergroup chat")
    approval_id = await tg.suspend()
    await tg.rt.outbox.drain()
    tg.clock.advance(3600)
    assert await tg.rt.outbox.drain() == 0  # never retried
    assert len(tg.api.calls_to("sendMessage")) == 1
    view = await _card_status(tg, approval_id)
    assert view["cards"][0]["status"] == "failed"  # type: ignore[index]
    assert "kicked" in view["cards"][0]["error"]  # type: ignore[index]
    assert "kicked" in view["deliveries"][0]["last_error"]  # type: ignore[index]
    failed = [e for e in await tg.rt.store.list_events(approval_id) if e.kind == "delivery_failed"]
    assert len(failed) == 1


async def test_400_is_terminal(tg: TG) -> None:
    tg.api.fail("sendMessage", 400, "Bad Request: chat not found")
    approval_id = await tg.suspend()
    await tg.rt.outbox.drain()
    card = await tg.rt.store.get_card(approval_id, f"telegram:{CHAT}")
    assert card is not None and card.status is DeliveryStatus.FAILED and "chat not found" in (card.error or "").lower()


async def test_chat_migration_is_followed(tg: TG) -> None:
    new_chat = -1009999
    tg.api.fail(
        "sendMessage", 400, "Bad Request: group chat was upgraded to a supergroup chat", migrate_to_chat_id=new_chat
    )
    approval_id = await tg.suspend()
    await tg.rt.outbox.drain()
    card = await tg.rt.store.get_card(approval_id, f"telegram:{CHAT}")
    assert card is not None and card.ref is not None
    chat, mid = parse_ref(card.ref)
    assert chat == new_chat and (new_chat, mid) in tg.api.messages
    # later syncs edit the card in the new chat
    await tg.client.post(f"/v1/approvals/{approval_id}/decision", json={"outcome": "approve"}, headers=OPERATOR)
    await tg.rt.outbox.drain()
    assert "Approved" in tg.api.message(new_chat, mid)["text"]


async def test_card_sync_after_an_api_decision(tg: TG) -> None:
    approval_id, mid = await tg.posted()
    assert tg.api.message(CHAT, mid)["reply_markup"] is not None
    resp = await tg.client.post(
        f"/v1/approvals/{approval_id}/decision",
        json={"outcome": "reject", "by": "web:ops", "comment": "not this month"},
        headers=OPERATOR,
    )
    assert resp.status == 200
    await tg.rt.outbox.drain()
    card = tg.api.message(CHAT, mid)
    # the operator decided (as itself, never as the person it names in `by`)
    assert "Rejected</b> by operator:test" in card["text"] and "💬 not this month" in card["text"]
    assert "web:ops" not in card["text"]
    assert card.get("reply_markup") is None
    edit = tg.api.calls_to("editMessageText")[-1].params
    assert "reply_markup" not in edit and edit["parse_mode"] == "HTML"


async def test_not_modified_counts_as_success(tg: TG) -> None:
    approval_id, _mid = await tg.posted()
    approval = await tg.rt.service.get(approval_id)
    channel = tg.rt.channels["telegram"]
    card = await tg.rt.store.get_card(approval_id, f"telegram:{CHAT}")
    assert card is not None and card.ref is not None
    outgoing = OutgoingCard(f"telegram:{CHAT}", str(CHAT), approval, tg.clock.now(), card.ref)
    await channel.update_card(outgoing)  # identical content: 400 inside
    assert len(tg.api.calls_to("editMessageText")) == 1


async def test_cancel_and_timeout_sync_the_card(tg: TG) -> None:
    approval_id, mid = await tg.posted()
    tg.clock.advance(minutes=31)
    assert await tg.rt.service.apply_due(approval_id, tg.clock.now()) == "timed_out"
    await tg.rt.outbox.drain()
    text = tg.api.message(CHAT, mid)["text"]
    assert "Timed out</b>: rejected by policy" in text and tg.api.message(CHAT, mid).get("reply_markup") is None


async def test_poll_feeds_the_same_handler(tg: TG) -> None:
    approval_id, mid = await tg.posted()
    tg.api.updates.append(tg.press(ALICE, tg.data(mid, "Approve"), mid))
    channel = tg.rt.channels["telegram"]
    offset = await poll_once(channel, None, 0)  # type: ignore[arg-type]
    assert offset is not None
    assert (await tg.rt.service.get(approval_id)).status is Status.APPROVED
    assert tg.answers() == ["Approved"]
    assert await poll_once(channel, offset, 0) == offset  # type: ignore[arg-type]
    assert tg.api.calls_to("getUpdates")[-1].params["offset"] == str(offset)


async def test_set_webhook_sends_secret_and_allowed_updates(
    settings_factory: Callable[..., Settings], tg_api: FakeTelegramAPI, clock: FakeClock
) -> None:
    telegram = {"bot_token": TOKEN, "webhook_secret": SECRET, "base_url": tg_api.base_url}
    rt = Runtime(settings_factory(server={"public_url": "https://gw.example"}, telegram=telegram), clock=clock)
    await rt.start(background=False)  # Telegram calls only https:// webhooks: http:// is refused
    try:
        assert await set_webhook(argparse.Namespace(), rt.channels["telegram"]) == 0
    finally:
        await rt.stop()
    params = tg_api.calls_to("setWebhook")[-1].params
    assert params["url"] == "https://gw.example/webhooks/telegram"
    assert params["secret_token"] == SECRET
    assert params["allowed_updates"] == ["callback_query", "message"]


async def test_reminder_replies_to_the_card(tg: TG) -> None:
    approval_id, mid = await tg.posted(policy="nudge")
    tg.clock.advance(minutes=20)
    assert await tg.rt.service.apply_due(approval_id, tg.clock.now()) == "reminded"
    await tg.rt.outbox.drain()
    sent = tg.api.calls_to("sendMessage")[-1].params
    assert sent["reply_parameters"]["message_id"] == mid
    assert "Reminder" in sent["text"] and "auto-reject in 10 min" in sent["text"]


async def test_fake_refuses_oversized_callback_data_and_that_is_terminal(tg: TG) -> None:
    from telegram import InlineKeyboardButton, InlineKeyboardMarkup
    from telegram.error import BadRequest

    from adapters.telegram.errors import delivery_error

    channel = tg.rt.channels["telegram"]
    markup = InlineKeyboardMarkup([[InlineKeyboardButton("x", callback_data="x" * 65)]])
    with pytest.raises(BadRequest) as info:
        await channel.bot.send_message(CHAT, "hi", reply_markup=markup)  # type: ignore[attr-defined]
    assert "button_data_invalid" in info.value.message.lower()
    assert delivery_error(info.value).transient is False


async def test_an_id_too_long_for_callback_data_fails_the_card_for_good(tg: TG) -> None:
    from gateway.core.models import OutboxKind
    from gateway.store.base import NewOutbox

    approval = await tg.rt.service.get(await tg.suspend())
    long_id = approval.evolve(id="L" * 50, idempotency_key="other")
    await tg.rt.store.create_approval(long_id, [], [NewOutbox(long_id.id, f"telegram:{CHAT}", OutboxKind.POST)])
    await tg.rt.outbox.drain()
    card = await tg.rt.store.get_card(long_id.id, f"telegram:{CHAT}")
    assert card is not None and card.status is DeliveryStatus.FAILED and "callback_data" in (card.error or "")


@pytest.mark.parametrize("source", ["token", "cancel"])
async def test_token_and_cancel_decisions_sync_the_card(tg: TG, source: str) -> None:
    resp = await tg.client.post("/v1/suspend", json=suspend_body(channels=[f"telegram:{CHAT}"]), headers=AUTH)
    body = await resp.json()
    await tg.rt.outbox.drain()
    mid = max(m for (_, m) in tg.api.messages)
    if source == "token":
        resp = await tg.client.post("/v1/resume", json={"token": body["resume_token"], "outcome": "approve"})
        expected = "Approved</b> by token"
    else:
        resp = await tg.client.post(f"/v1/approvals/{body['id']}/cancel", json={"by": "web:ops"}, headers=OPERATOR)
        expected = "Cancelled</b> by operator:test"
    assert resp.status == 200, await resp.text()
    await tg.rt.outbox.drain()
    card = tg.api.message(CHAT, mid)
    assert expected in card["text"] and card.get("reply_markup") is None
