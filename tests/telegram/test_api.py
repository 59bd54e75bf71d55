"""The light Bot API path (adapters/telegram/api.py): the same bytes on the wire as
python-telegram-bot's `Bot` methods, PTB's errors, no PTB `Message` built per card or press."""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st
from telegram import Bot, ForceReply, InlineKeyboardButton, InlineKeyboardMarkup, Message, ReplyParameters
from telegram.constants import ParseMode
from telegram.error import NetworkError, TelegramError

from adapters.telegram import render
from adapters.telegram.api import BotApi, form, reply_to, sent
from adapters.telegram.errors import delivery_error, unsent
from adapters.telegram.request import AiohttpRequest, urlencoded
from gateway.core.models import Policy, Status
from tests.fakes.telegram_api import BOT_USER
from tests.telegram.conftest import ALICE, CHAT, TG, TOKEN
from tests.telegram.test_render import NOW, SIGNER, approval

MESSAGE = {"message_id": 77, "date": 1_900_000_000, "chat": {"id": CHAT, "type": "supergroup"}, "text": "x"}


@dataclass
class Recorder:
    """A Bot API that records each call's method, content type and form fields, in order."""

    calls: list[tuple[str, str, list[tuple[str, Any]]]] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        fields = list((await request.post()).items())
        self.calls.append((request.match_info["method"], request.content_type, fields))
        result: Any = BOT_USER if request.match_info["method"] == "getMe" else MESSAGE
        if request.match_info["method"] == "answerCallbackQuery":
            result = True
        return web.json_response({"ok": True, "result": result})


@pytest.fixture
async def wire(aiohttp_server: Callable[..., Any]) -> AsyncIterator[tuple[Recorder, Bot, BotApi]]:
    recorder = Recorder()
    app = web.Application()
    app.router.add_post("/bot{token}/{method}", recorder.handle)
    server = await aiohttp_server(app)
    request = AiohttpRequest(4, 5.0)
    bot = Bot(TOKEN, base_url=str(server.make_url("/bot")), request=request)
    await request.initialize()
    try:
        yield recorder, bot, BotApi(request, bot.base_url)
    finally:
        await request.shutdown()


def _ptb_markup(keyboard: render.Keyboard) -> InlineKeyboardMarkup:
    """The same keyboard built from python-telegram-bot's objects, as the channel did before."""
    rows = keyboard["inline_keyboard"]
    return InlineKeyboardMarkup(
        [
            [InlineKeyboardButton(b["text"], callback_data=b.get("callback_data"), url=b.get("url")) for b in r]
            for r in rows
        ]
    )


async def test_every_call_sends_what_the_ptb_bot_sends(wire: tuple[Recorder, Bot, BotApi]) -> None:
    """Field by field, in order, as strings: PTB's encoding of each call the channel makes."""
    recorder, bot, api = wire
    policy = Policy(timeout=timedelta(hours=1), grants=("1h", "run"), extend=(timedelta(hours=1),), max_extensions=1)
    keyboard = render.keyboard(approval(policy=policy), SIGNER)
    assert keyboard is not None and len(keyboard["inline_keyboard"]) == 3  # vote, grants, extend
    link = render.markup([[render.url_button("Open the edit form", "https://gw.example/e/abc?t=1&u=2")]])
    text = render.render_card(approval(), NOW)
    html = ParseMode.HTML
    pairs = [
        (
            bot.send_message(CHAT, text, parse_mode=html, reply_markup=_ptb_markup(keyboard)),
            api.send_message(CHAT, text, reply_markup=keyboard),
        ),
        (
            bot.edit_message_text(text, chat_id=CHAT, message_id=77, parse_mode=html, reply_markup=None),
            api.edit_message_text(CHAT, 77, text, None),
        ),
        (
            bot.edit_message_text(text, chat_id="@ops", message_id=77, parse_mode=html, reply_markup=_ptb_markup(link)),
            api.edit_message_text("@ops", 77, text, link),
        ),
        (
            bot.send_message(
                CHAT,
                "⏰ <b>x</b>",
                parse_mode=html,
                reply_parameters=ReplyParameters(77, allow_sending_without_reply=True),
            ),
            api.send_message(CHAT, "⏰ <b>x</b>", reply_parameters=reply_to(77)),
        ),
        (
            bot.send_message(
                CHAT,
                "why?",
                parse_mode=html,
                reply_markup=ForceReply(selective=True, input_field_placeholder="Reason for rejecting"),
                reply_parameters=ReplyParameters(77, allow_sending_without_reply=True),
            ),
            api.send_message(CHAT, "why?", reply_markup=render.reason_markup(), reply_parameters=reply_to(77)),
        ),
        (
            bot.send_message(ALICE, "link", parse_mode=html, reply_markup=_ptb_markup(link)),
            api.send_message(ALICE, "link", reply_markup=link),
        ),
        (
            bot.answer_callback_query("q-1", text="Approved", show_alert=False),
            api.answer_callback_query("q-1", "Approved", False),
        ),
        (bot.answer_callback_query("q-2", text="No", show_alert=True), api.answer_callback_query("q-2", "No", True)),
    ]
    for before, after in pairs:
        await before
        await after
        ptb, ours = recorder.calls[-2:]
        assert ours == ptb
        assert ours[1] == "application/x-www-form-urlencoded"


async def test_a_sent_message_is_read_from_the_answer(wire: tuple[Recorder, Bot, BotApi]) -> None:
    _, _, api = wire
    assert await api.send_message(CHAT, "hi") == (CHAT, 77)
    assert sent("sendMessage", {"message_id": 5, "chat": {"id": "@ops"}}) == ("@ops", 5)


@pytest.mark.parametrize(
    "answer",
    [
        True,
        None,
        [],
        {},
        {"message_id": 5},
        {"message_id": True, "chat": {"id": 1}},
        {"message_id": 5, "chat": {"id": 1.5}},
    ],
)
def test_a_success_answer_without_a_message_leaves_the_post_uncertain(answer: object) -> None:
    """Telegram said ok: the card may be up, so it is never posted again on its own."""
    with pytest.raises(NetworkError) as info:
        sent("sendMessage", answer)
    assert not unsent(info.value)
    failure = delivery_error(info.value)
    assert failure.transient and failure.uncertain and not failure.unsent


def test_the_form_is_ptbs_encoding() -> None:
    assert form({"a": "x", "b": None, "c": 3, "d": True, "e": {"k": ["é"]}}) == {
        "a": "x",
        "c": "3",
        "d": "true",
        "e": '{"k": ["\\u00e9"]}',
    }


@given(st.dictionaries(st.text(), st.text(), max_size=5))
def test_the_form_is_encoded_byte_for_byte_as_urlencode(fields: dict[str, str]) -> None:
    """The light path writes the form itself (no aiohttp FormData): the same bytes as urllib's
    urlencode, which aiohttp's FormData and PTB's own transport use."""
    assert urlencoded(fields) == urllib.parse.urlencode(fields).encode("ascii")


def test_a_card_form_is_encoded_as_urlencode() -> None:
    keyboard = render.keyboard(approval(), SIGNER)
    fields = form(
        {"chat_id": CHAT, "text": render.render_card(approval(), NOW) + " é 💸 \x00+&=%", "reply_markup": keyboard}
    )
    assert urlencoded(fields) == urllib.parse.urlencode(fields).encode("ascii")


async def test_concurrent_calls_each_send_their_own_form(tg: TG) -> None:
    """The form travels beside PTB's `post` in a context variable: no call sees another's."""
    api: BotApi = tg.rt.channels["telegram"].api  # type: ignore[attr-defined]
    await asyncio.gather(*(api.answer_callback_query(f"q{i}", f"t{i}", i % 2 == 0) for i in range(40)))
    calls = tg.api.calls_to("answerCallbackQuery")
    got = {(c.params["callback_query_id"], c.params["text"], c.params["show_alert"]) for c in calls}
    assert got == {(f"q{i}", f"t{i}", "true" if i % 2 == 0 else "false") for i in range(40)}
    await tg.rt.channels["telegram"].bot.get_me()  # type: ignore[attr-defined]
    assert tg.api.calls[-1].method == "getMe" and tg.api.calls[-1].params == {}  # no form left behind


async def test_errors_are_ptbs(tg: TG) -> None:
    api: BotApi = tg.rt.channels["telegram"].api  # type: ignore[attr-defined]
    tg.api.fail("sendMessage", 403, "Forbidden: bot was blocked by the user")
    with pytest.raises(TelegramError) as info:
        await api.send_message(ALICE, "hi")
    assert type(info.value).__name__ == "Forbidden" and "blocked" in info.value.message


async def test_a_full_cycle_builds_no_ptb_message(tg: TG, monkeypatch: pytest.MonkeyPatch) -> None:
    """Post, press (answered), sync, a reminder: none of it turns an answer into PTB objects
    (`Message.de_json` was about a tenth of a millisecond per call, two calls per cycle)."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a PTB Message was built on the hot path")

    monkeypatch.setattr(Message, "de_json", refuse)
    approval_id, mid = await tg.posted(policy="nudge")
    tg.clock.advance(minutes=20)
    assert await tg.rt.service.apply_due(approval_id, tg.clock.now()) == "reminded"
    await tg.rt.outbox.drain()
    assert await tg.send(tg.press(ALICE, tg.data(mid, "Approve"), mid)) == 200
    await tg.rt.outbox.drain()
    assert (await tg.rt.service.get(approval_id)).status is Status.APPROVED
    assert tg.answers() == ["Approved"]
    assert "Approved" in tg.api.message(CHAT, mid)["text"] and tg.api.message(CHAT, mid).get("reply_markup") is None
    hot = [c.method for c in tg.api.calls if c.method != "getMe"]  # the Bot's, at start-up
    assert hot == ["sendMessage", "sendMessage", "answerCallbackQuery", "editMessageText"]


@pytest.mark.parametrize("body", [b"<html>502</html>", b'{"ok": true}', b"[1, 2]"])
async def test_an_unreadable_success_answer_leaves_the_post_uncertain(
    aiohttp_server: Callable[..., Any], body: bytes
) -> None:
    """A 200 whose body is not the Bot API's JSON (a proxy's page, no `result`): Telegram may have
    posted the card, so it is not sent again on its own (PTB's own error for it says unsent)."""

    async def handle(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    app = web.Application()
    app.router.add_post("/bot{token}/{method}", handle)
    server = await aiohttp_server(app)
    request = AiohttpRequest(1, 5.0)
    await request.initialize()
    try:
        with pytest.raises(NetworkError) as info:
            await BotApi(request, str(server.make_url(f"/bot{TOKEN}"))).send_message(CHAT, "hi")
    finally:
        await request.shutdown()
    failure = delivery_error(info.value)
    assert failure.uncertain and not failure.unsent
    assert "sendMessage" in str(failure)
