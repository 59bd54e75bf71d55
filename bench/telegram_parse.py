"""The Telegram adapter's per-cycle Python work, before and after reading JSON directly.

Updates: a webhook press read for the gateway's six fields straight from the JSON (what
`adapters.telegram.parse.read_update` does) against python-telegram-bot's `Update.de_json` and its
object tree (what the webhook did before), on the same press body.

Answers: the three Bot API calls of a cycle (the card's sendMessage with its keyboard, the press's
answerCallbackQuery, the sync's editMessageText), from the call to the value the channel keeps,
through PTB's `Bot` methods and PTB keyboard objects (before) and through `adapters.telegram.api`
with JSON keyboards (after). Both run on an `AiohttpRequest` whose transport is replaced by the
canned answer of the fake Bot API, so only the building of the request and the handling of the
answer are timed (PTB's `post`, its answer decoding and error checks included on both sides).

    python -m bench.telegram_parse [--n 20000]

Forms: the card's sendMessage form as bytes, through aiohttp's FormData (what `do_request` sent
before: `urlencode`, and a MultipartWriter it builds and never uses) against `request.urlencoded`;
the bytes are checked equal.

Prints microseconds per update, call or form, best of 5 interleaved rounds (CPU time of this process,
so a busy machine moves both sides alike). `python -m bench.cycle` is the end-to-end measure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.constants import ParseMode
from telegram.request import RequestData

from adapters.telegram import render
from adapters.telegram.api import BotApi, form
from adapters.telegram.parse import read_update
from adapters.telegram.request import AiohttpRequest, urlencoded
from tests.fakes.telegram_api import BOT_USER, callback_update

USER = {"id": 111, "is_bot": False, "first_name": "Alice", "username": "alice"}
RAW = json.dumps(callback_update(1, "q-1", USER, -1001234567890, 42, "a|0123456789abcdef|t|0123456789abcdef")).encode()
BOT = Bot("123456:BENCH-token_abc")
CHAT = -1001234567890
APPROVE, REJECT = "a|0123456789abcdef|t123456789|0123456789abcdef", "r|0123456789abcdef|0123456789abcdef"
CARD = "🔔 <b>Approval needed</b>\n<b>Pay ACME</b>\n" + "Invoice #12 and fees. " * 20 + "\n<i>id 0123456789abcdef</i>"
MESSAGE = {
    "message_id": 101,
    "date": 1_900_000_000,
    "chat": {"id": CHAT, "type": "supergroup", "title": "ops"},
    "from": BOT_USER,
    "text": CARD,
    "reply_markup": {"inline_keyboard": [[{"text": "✅ Approve", "callback_data": APPROVE}]]},
}
ANSWERS = {
    "sendMessage": json.dumps({"ok": True, "result": MESSAGE}).encode(),
    "editMessageText": json.dumps({"ok": True, "result": {**MESSAGE, "reply_markup": None}}).encode(),
    "answerCallbackQuery": b'{"ok":true,"result":true}',
}


def before() -> Any:
    """The old webhook: the whole Update, then the same six fields."""
    update = Update.de_json(json.loads(RAW), BOT)
    assert update is not None and update.callback_query is not None
    q = update.callback_query
    m = q.message
    assert m is not None
    return (update.update_id, q.id, q.from_user.id, q.from_user.username, m.chat.id, m.message_id, q.data)


def after() -> Any:
    return read_update(json.loads(RAW))


class CannedRequest(AiohttpRequest):
    """The gateway's request class with the fake Bot API's answer instead of a connection; the
    form is encoded as `do_request` encodes it (PTB's `json_parameters` on the before side)."""

    async def do_request(self, url: str, method: str, request_data: RequestData | None = None, **_: object) -> Any:
        if request_data is not None:
            dict(request_data.json_parameters)
        return 200, ANSWERS[url.rpartition("/")[2]]


REQUEST = CannedRequest(1, 5.0)
OLD_BOT = Bot("123456:BENCH-token_abc", base_url="http://bot.invalid/bot", request=REQUEST)
API = BotApi(REQUEST, OLD_BOT.base_url)


async def calls_before() -> Any:
    """The channel before: PTB keyboard objects, `Bot` methods, a `Message` from each answer."""
    markup = InlineKeyboardMarkup(
        [
            [
                InlineKeyboardButton("✅ Approve", callback_data=APPROVE),
                InlineKeyboardButton("❌ Reject", callback_data=REJECT),
            ]
        ]
    )
    message = await OLD_BOT.send_message(CHAT, CARD, parse_mode=ParseMode.HTML, reply_markup=markup)
    await OLD_BOT.answer_callback_query("q-1", text="Approved", show_alert=False)
    await OLD_BOT.edit_message_text(CARD, chat_id=CHAT, message_id=101, parse_mode=ParseMode.HTML, reply_markup=None)
    return message.chat.id, message.message_id


async def calls_after() -> Any:
    markup = render.markup([[render.button("✅ Approve", APPROVE), render.button("❌ Reject", REJECT)]])
    where = await API.send_message(CHAT, CARD, reply_markup=markup)
    await API.answer_callback_query("q-1", "Approved", False)
    await API.edit_message_text(CHAT, 101, CARD, None)
    return where


async def per_cycle(fn: Callable[[], Awaitable[Any]], n: int) -> float:
    """CPU µs per call: each round of `fn` makes three calls."""
    start = time.process_time()
    for _ in range(n):
        await fn()
    return (time.process_time() - start) / n / 3 * 1e6


def per_call(fn: Callable[[], Any], n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n * 1e6


def report(rounds: dict[str, list[float]], unit: str) -> None:
    best = {name: min(xs) for name, xs in rounds.items()}
    for name, us in best.items():
        print(f"{name:<30} {us:7.2f} µs per {unit}")
    b, a = best.values()
    print(f"{'saved':<30} {b - a:7.2f} µs ({b / a:.1f}x)")


async def answers(n: int) -> dict[str, list[float]]:
    assert await calls_before() == await calls_after() == (CHAT, 101)
    rounds: dict[str, list[float]] = {"before (Bot methods, Message)": [], "after (api.BotApi, JSON)": []}
    for _ in range(5):
        rounds["before (Bot methods, Message)"].append(await per_cycle(calls_before, n))
        rounds["after (api.BotApi, JSON)"].append(await per_cycle(calls_after, n))
    return rounds


def forms(n: int) -> dict[str, list[float]]:
    markup = render.markup([[render.button("✅ Approve", APPROVE), render.button("❌ Reject", REJECT)]])
    fields = form({"chat_id": CHAT, "text": CARD, "parse_mode": "HTML", "reply_markup": markup})
    assert aiohttp.FormData(fields)().decode().encode() == urlencoded(fields)
    rounds: dict[str, list[float]] = {"before (aiohttp FormData)": [], "after (request.urlencoded)": []}
    for _ in range(5):
        rounds["before (aiohttp FormData)"].append(per_call(lambda: aiohttp.FormData(fields)(), n))
        rounds["after (request.urlencoded)"].append(per_call(lambda: urlencoded(fields), n))
    return rounds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=20000)
    args = p.parse_args()
    rounds: dict[str, list[float]] = {"before (Update.de_json)": [], "after (read_update)": []}
    for _ in range(5):
        rounds["before (Update.de_json)"].append(per_call(before, args.n))
        rounds["after (read_update)"].append(per_call(after, args.n))
    report(rounds, "update")
    print("Bot API calls (card post, press answer, card sync), per call:")
    report(asyncio.run(answers(max(1, args.n // 10))), "call")
    print("The card's form, encoded:")
    report(forms(max(1, args.n // 4)), "form")


if __name__ == "__main__":
    main()
