"""A group that became a supergroup (`migrate_to_chat_id`) is followed on every call: the post,
an edit, a reminder and the reason prompt; the card's new chat id is stored durably."""

from __future__ import annotations

from adapters.telegram.parse import parse_ref
from gateway.core.models import Status
from tests.conftest import OPERATOR
from tests.telegram.conftest import BOB, CHAT, TG

SUPERGROUP = -1009999
ADDRESS = f"telegram:{CHAT}"


async def _ref(tg: TG, approval_id: str) -> tuple[int | str, int]:
    card = await tg.rt.store.get_card(approval_id, ADDRESS)
    assert card is not None and card.ref is not None
    return parse_ref(card.ref)


async def _moved(tg: TG, approval_id: str) -> list[dict[str, object]]:
    return [dict(e.data) for e in await tg.rt.store.list_events(approval_id) if e.kind == "card_moved"]


def _chats(tg: TG, method: str) -> list[int]:
    return [int(c.params["chat_id"]) for c in tg.api.calls_to(method)]


async def test_posts_follow_the_migration_and_remember_it(tg: TG) -> None:
    tg.api.migrate(CHAT, SUPERGROUP)
    first = await tg.suspend()
    await tg.rt.outbox.drain()
    second = await tg.suspend(run_id="run-2")
    await tg.rt.outbox.drain()
    assert (await _ref(tg, first))[0] == SUPERGROUP and (await _ref(tg, second))[0] == SUPERGROUP
    assert _chats(tg, "sendMessage") == [CHAT, SUPERGROUP, SUPERGROUP]  # refused once, then known


async def test_an_edit_follows_the_migration_and_the_card_moves_for_good(tg: TG) -> None:
    approval_id, mid = await tg.posted()
    tg.api.migrate(CHAT, SUPERGROUP)
    resp = await tg.client.post(f"/v1/approvals/{approval_id}/decision", json={"outcome": "approve"}, headers=OPERATOR)
    assert resp.status == 200
    await tg.rt.outbox.drain()
    assert _chats(tg, "editMessageText") == [CHAT, SUPERGROUP]
    assert "Approved" in tg.api.message(SUPERGROUP, mid)["text"]
    assert await _ref(tg, approval_id) == (SUPERGROUP, mid)  # in the store: every later call goes there
    assert await _moved(tg, approval_id) == [{"from": f"{CHAT}:{mid}", "ref": f"{SUPERGROUP}:{mid}"}]
    card = await tg.rt.store.get_card(approval_id, ADDRESS)
    assert card is not None and card.status.value == "done"


async def test_a_reminder_follows_the_migration(tg: TG) -> None:
    approval_id, mid = await tg.posted(policy="nudge")
    tg.api.migrate(CHAT, SUPERGROUP)
    now = tg.clock.advance(minutes=20)  # 10 minutes before the deadline
    assert await tg.rt.service.apply_due(approval_id, now) == "reminded"
    await tg.rt.outbox.drain()
    reminder = tg.api.calls_to("sendMessage")[-1].params
    assert int(reminder["chat_id"]) == SUPERGROUP and reminder["reply_parameters"]["message_id"] == mid
    assert await _ref(tg, approval_id) == (SUPERGROUP, mid)
    kinds = [e.kind for e in await tg.rt.store.list_events(approval_id)]
    assert "reminder_sent" in kinds and "delivery_failed" not in kinds


async def test_the_reason_prompt_follows_the_migration(tg: TG) -> None:
    approval_id, mid = await tg.posted()
    tg.api.migrate(CHAT, SUPERGROUP)
    # a press that reached us from the old chat id (sent before the upgrade, delivered after)
    assert await tg.send(tg.press(BOB, tg.data_in(SUPERGROUP, mid, "Reject"), mid, username="bob")) == 200
    assert (await tg.rt.service.get(approval_id)).status is Status.REJECTED
    assert _chats(tg, "sendMessage")[-2:] == [CHAT, SUPERGROUP]  # the prompt, refused then followed
    prompt_id = max(m for (chat, m) in tg.api.messages if chat == SUPERGROUP)
    assert await tg.send(tg.reply(BOB, prompt_id, "wrong vendor", chat_id=SUPERGROUP)) == 200
    decision = (await tg.rt.service.get(approval_id)).decision
    assert decision is not None and decision.comment == "wrong vendor"
    assert await _ref(tg, approval_id) == (SUPERGROUP, mid)
    await tg.rt.outbox.drain()
    assert _chats(tg, "editMessageText") == [SUPERGROUP]  # straight to the moved card
    assert "wrong vendor" in tg.api.message(SUPERGROUP, mid)["text"]
