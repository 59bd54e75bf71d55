"""A press's answer rides in the webhook's 200 (`{"method": "answerCallbackQuery", ...}`), which
Telegram runs: one Bot API request fewer per press. Polling has no such answer and calls the API;
any other call of the update (the reason question, an edit link) stays a request. A redelivery
through the webhook (its first 200 never reached Telegram) is answered in its own reply."""

from __future__ import annotations

import json
from typing import Any

from adapters.telegram.cli import poll_once
from adapters.telegram.reply import WebhookReply
from gateway.core.models import Status
from tests.fakes.telegram_api import QUERY_INVALID
from tests.telegram.conftest import ALICE, BOB, HEADERS, MALLORY, TG


async def _post(tg: TG, update: dict[str, Any]) -> dict[str, Any]:
    """Deliver `update` and return the webhook's JSON without Telegram running it (a lost 200)."""
    resp = await tg.client.post("/webhooks/telegram", data=json.dumps(update), headers=HEADERS)
    assert resp.status == 200 and resp.content_type == "application/json"
    body: dict[str, Any] = await resp.json()
    return body


async def test_the_webhooks_reply_answers_the_press_instead_of_a_request(tg: TG) -> None:
    approval_id, mid = await tg.posted()
    press = tg.press(ALICE, tg.data(mid, "Approve"), mid)
    body = await _post(tg, press)
    query = press["callback_query"]["id"]
    assert body == {
        "method": "answerCallbackQuery",
        "callback_query_id": query,
        "text": "Approved",
        "show_alert": False,
    }
    assert (await tg.rt.service.get(approval_id)).status is Status.APPROVED  # answered after the commit
    assert tg.api.calls_to("answerCallbackQuery") == []  # no request: the answer is Telegram's to run
    await tg.api.apply_webhook_reply(body, press)
    assert tg.answers() == ["Approved"] and tg.api.http_calls_to("answerCallbackQuery") == []

    stranger = tg.press(MALLORY, tg.data(mid, "Reject"), mid)  # a refusal is an alert, as before
    body = await _post(tg, stranger)
    assert body["method"] == "answerCallbackQuery" and body["show_alert"] is True
    assert body["callback_query_id"] == stranger["callback_query"]["id"] and body["text"] == "Not authorised"


async def test_an_update_without_an_answer_still_gets_ok(tg: TG) -> None:
    _, mid = await tg.posted()
    assert await _post(tg, tg.reply(ALICE, mid, "just chatting")) == {"ok": True}


async def test_a_long_answer_in_the_reply_is_cut_to_telegrams_200_characters(tg: TG) -> None:
    _, mid = await tg.posted()
    long_name = "N" * 400
    await tg.send(tg.press(ALICE, tg.data(mid, "Approve"), mid, username=long_name))
    body = await _post(tg, tg.press(BOB, tg.data(mid, "Approve"), mid))  # "Already approved by @NNN…"
    assert len(body["text"]) == 200 and body["text"].endswith("…") and body["show_alert"] is True


async def test_polling_answers_the_press_with_a_request(tg: TG) -> None:
    approval_id, mid = await tg.posted()
    tg.api.updates.append(tg.press(ALICE, tg.data(mid, "Approve"), mid))
    await poll_once(tg.rt.channels["telegram"], None, 0)  # type: ignore[arg-type]
    assert (await tg.rt.service.get(approval_id)).status is Status.APPROVED
    assert [c.params["text"] for c in tg.api.http_calls_to("answerCallbackQuery")] == ["Approved"]


async def test_a_reject_under_require_reason_asks_by_request_and_answers_in_the_reply(tg: TG) -> None:
    approval_id, mid = await tg.posted(policy="strict")
    press = tg.press(BOB, tg.data(mid, "Reject"), mid)
    body = await _post(tg, press)
    assert body["method"] == "answerCallbackQuery" and body["text"] == "Reply to my question with your reason to reject"
    ask = tg.api.http_calls_to("sendMessage")[-1].params  # the question: a request, its message id is needed
    assert ask["reply_markup"]["force_reply"] is True and f"tg://user?id={BOB}" in ask["text"]
    assert tg.api.calls_to("answerCallbackQuery") == []
    assert (await tg.rt.service.get(approval_id)).status is Status.WAITING  # the reply decides


async def test_a_reject_that_asks_for_a_reason_answers_in_the_reply(tg: TG) -> None:
    approval_id, mid = await tg.posted()
    assert await tg.send(tg.press(BOB, tg.data(mid, "Reject"), mid)) == 200
    assert (await tg.rt.service.get(approval_id)).status is Status.REJECTED
    assert tg.answers() == ["Rejected. Reply to my question with a reason, if you like."]
    assert (
        tg.api.http_calls_to("answerCallbackQuery") == []
        and "why reject" in tg.api.calls_to("sendMessage")[-1].params["text"]
    )


async def test_a_redelivered_press_is_answered_in_its_reply_once(tg: TG) -> None:
    """Telegram redelivers only an update whose 200 it did not get, so it never ran that reply:
    the redelivery answers (what the first delivery said), free; Telegram takes one answer per press."""
    approval_id, mid = await tg.posted()
    press = tg.press(ALICE, tg.data(mid, "Approve"), mid)
    await _post(tg, press)  # decided; the 200 is lost on its way to Telegram
    assert tg.answers() == []
    assert await tg.send(press) == 200  # the redelivery
    assert tg.answers() == ["Approved"]
    assert await tg.send(dict(press, update_id=press["update_id"] + 100)) == 200  # the same press again
    assert tg.answers() == ["Approved"]  # Telegram refused a second answer to one press
    assert [c.error for c in tg.api.calls_to("answerCallbackQuery")] == [None, QUERY_INVALID]
    assert tg.api.http_calls_to("answerCallbackQuery") == []
    decided = [e for e in await tg.rt.store.list_events(approval_id) if e.kind == "approved"]
    assert len(decided) == 1


async def test_a_redelivered_other_press_answers_with_the_state_now(tg: TG) -> None:
    _, mid = await tg.posted(policy="stretch")
    label = next(k for k in tg.buttons(mid) if k.startswith("⏳"))
    press = tg.press(ALICE, tg.buttons(mid)[label], mid)
    first = await _post(tg, press)  # extended; the 200 is lost
    assert first["text"].startswith("Extended")
    again = await _post(tg, press)
    assert again["text"].startswith("Waiting for a decision · ") and again["show_alert"] is False
    forged = tg.press(ALICE, "a|b|c|d", mid)
    await _post(tg, forged)
    assert (await _post(tg, forged))["text"] == "This button is not valid"


async def test_a_redelivery_from_polling_is_not_answered_again(tg: TG) -> None:
    _, mid = await tg.posted()
    press = tg.press(ALICE, tg.data(mid, "Approve"), mid)
    channel = tg.rt.channels["telegram"]
    assert await channel.updates.handle(press) == "approved"  # type: ignore[attr-defined]
    assert await channel.updates.handle(press) == "duplicate"  # type: ignore[attr-defined]
    assert [c.params["text"] for c in tg.api.http_calls_to("answerCallbackQuery")] == ["Approved"]


async def test_a_second_answer_of_one_update_is_a_request(tg: TG) -> None:
    """One method per reply: an answer beyond the first goes to the Bot API."""
    reply = WebhookReply()
    channel = tg.rt.channels["telegram"]
    await channel.answer("q1", "first", reply=reply)  # type: ignore[attr-defined]
    await channel.answer("q1", "second", alert=True, reply=reply)  # type: ignore[attr-defined]
    assert reply.body()["text"] == "first"
    assert [(c.params["text"], c.params["show_alert"]) for c in tg.api.http_calls_to("answerCallbackQuery")] == [
        ("second", "true")
    ]


async def test_the_fake_refuses_a_reply_telegram_could_not_run(tg: TG) -> None:
    """The fake runs a reply as Telegram would: what Telegram refuses is a failure tests see."""
    _, mid = await tg.posted()
    press = tg.press(ALICE, tg.data(mid, "Approve"), mid)
    other = tg.press(BOB, tg.data(mid, "Approve"), mid)
    bad = [
        {"method": "answerCallbackQuerry", "callback_query_id": "1"},
        {"method": "answerCallbackQuery", "callback_query_id": press["callback_query"]["id"], "text": "x" * 201},
        {"method": "answerCallbackQuery", "callback_query_id": other["callback_query"]["id"], "text": "x"},
        {"method": 7},
    ]
    for body in bad:
        call = await tg.api.apply_webhook_reply(body, press)
        assert call is not None and call.error is not None and call.via == "reply"
    assert tg.api.bad_replies == [c for c in tg.api.calls if c.via == "reply"] and len(tg.api.bad_replies) == 4
    assert await tg.api.apply_webhook_reply({"ok": True}, press) is None
