"""The one I/O class: the Bot API (base_url from config) behind the Channel protocol.

Cards, syncs, reminders and press answers go through `api.BotApi` (answers read as JSON); a
python-telegram-bot `Bot` on the same connection pool does the rest (getMe, the CLI's calls).

Telegram errors become `DeliveryError`s for the outbox (`errors.py`). The outbox writes the
attempt markers and decides what a post with an unknown outcome becomes; this class only talks
to the Bot API.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from aiohttp import web
from telegram import Bot
from telegram.error import BadRequest, ChatMigrated, TelegramError

from adapters.telegram import render
from adapters.telegram.api import BotApi, Chat, reply_to
from adapters.telegram.callback import CallbackTooLong
from adapters.telegram.errors import delivery_error, not_modified
from adapters.telegram.parse import card_ref, chat_id, parse_ref
from adapters.telegram.reply import WebhookReply
from adapters.telegram.request import AiohttpRequest, scrub
from adapters.telegram.spec import TelegramSettings
from adapters.telegram.updates import TelegramUpdates
from gateway.core.models import Approval
from gateway.plugin import Attempt, ChannelContext, DeliveryError, OutgoingCard

log = logging.getLogger("adapters.telegram")
T = TypeVar("T")
WEBHOOK_PATH = "/webhooks/telegram"
ALLOWED_UPDATES = ("callback_query", "message")
START_TIMEOUT = 5.0  # getMe at start-up: a slow Bot API must not hold the gateway's start
POOL_SIZE = 16  # connections to the Bot API
POSTS_IN_FLIGHT = 8  # sendMessage calls for cards at a time: the rest of the pool edits and answers
READ_TIMEOUT = 25.0  # seconds; under the outbox's cut at half its lease (30 s by default)


class TelegramChannel:
    kind = "telegram"
    posts_in_flight = POSTS_IN_FLIGHT

    def __init__(self, ctx: ChannelContext) -> None:
        self.ctx = ctx
        self.settings: TelegramSettings = ctx.settings
        # A sendMessage cut short by a timeout may have posted the card, which is then never
        # posted again (`uncertain`): wait long for Telegram's answer (PTB's default is 5 s).
        request = AiohttpRequest(POOL_SIZE, READ_TIMEOUT)
        self.bot = Bot(
            self.settings.bot_token,
            base_url=self.settings.base_url,
            request=request,
            get_updates_request=AiohttpRequest(1, 40),
        )
        self.api = BotApi(request, self.bot.base_url)  # initialized and shut down with the bot
        self.updates = TelegramUpdates(ctx, self)
        self._moved: dict[Chat, int] = {}  # chats that became supergroups: old id -> new id

    @property
    def resend_unknown(self) -> bool:
        """No idempotency key and no lookup: a card whose post had no answer is sent again only
        when the operator accepts a possible duplicate (`telegram.resend_uncertain`)."""
        return self.settings.resend_uncertain

    async def start(self) -> None:
        try:
            async with asyncio.timeout(START_TIMEOUT):
                await self.bot.initialize()
        except (TelegramError, TimeoutError) as exc:  # cards are retried by the outbox; do not block start-up
            # The Bot, unlike BotApi, leaves the message as PTB built it: an error answer's body
            # (a proxy's page may echo the URL, so the token) is in it.
            why = scrub(exc.message, f"{self.bot.base_url}/getMe") if isinstance(exc, TelegramError) else "timed out"
            log.warning("telegram: getMe failed at start-up (%s); deliveries will retry", why)

    async def close(self) -> None:
        await self.bot.shutdown()

    def routes(self) -> Sequence[web.AbstractRouteDef]:
        return (web.post(WEBHOOK_PATH, self.updates.webhook),)

    async def _call(self, fn: Callable[[], Awaitable[T]]) -> T:
        try:
            return await fn()
        except TelegramError as exc:
            raise delivery_error(exc) from None

    async def follow(self, chat: Chat, call: Callable[[Chat], Awaitable[T]]) -> tuple[T, Chat]:
        """`call(chat)`; if Telegram says the group became a supergroup (`migrate_to_chat_id`),
        `call` again there. Returns the result and the chat it went to; raises TelegramError."""
        chat = self._moved.get(chat, chat)
        try:
            return await call(chat), chat
        except ChatMigrated as exc:
            log.info("telegram: chat %s migrated to %s; following it", chat, exc.new_chat_id)
            self._moved[chat] = exc.new_chat_id
            return await call(exc.new_chat_id), exc.new_chat_id

    async def _card_moved(self, card: OutgoingCard, chat: Chat, message_id: int) -> None:
        """The card's chat moved: its new ref goes in the store, for every later edit and reminder."""
        assert card.ref is not None
        new = card_ref(chat, message_id)
        if new != card.ref and await self.ctx.inbound.card_moved(card.approval.id, card.address, card.ref, new):
            log.info("telegram: the card of %s moved to chat %s", card.approval.id, chat)

    # ---------------------------------------------------------------- Channel protocol
    async def post_card(self, card: OutgoingCard, attempts: Sequence[Attempt]) -> str:
        text = render.render_card(card.approval, card.now, self.ctx.decides)
        try:
            markup = render.keyboard(card.approval, self.ctx.signer, self.ctx.decides)
        except CallbackTooLong as exc:
            raise DeliveryError(f"telegram: {exc}", transient=False, unsent=True) from None

        async def send(chat: Chat) -> tuple[Chat, int]:
            return await self.api.send_message(chat, text, reply_markup=markup)

        (where, message_id), _ = await self._call(lambda: self.follow(chat_id(card.target), send))
        return card_ref(where, message_id)

    async def update_card(self, card: OutgoingCard) -> None:
        assert card.ref is not None
        chat, message_id = parse_ref(card.ref)
        approval = card.approval
        text = render.render_card(approval, card.now, self.ctx.decides)
        markup = render.keyboard(approval, self.ctx.signer, self.ctx.decides)

        async def edit(to: Chat) -> None:
            try:
                await self.api.edit_message_text(to, message_id, text, markup)
            except BadRequest as exc:
                if not not_modified(exc):  # identical content: the card already shows it
                    raise

        _, where = await self._call(lambda: self.follow(chat, edit))
        if where != chat:
            await self._card_moved(card, where, message_id)

    async def send_reminder(self, card: OutgoingCard) -> None:
        chat, reply = (chat_id(card.target), None) if card.ref is None else parse_ref(card.ref)
        params = None if reply is None else reply_to(reply)
        text = render.render_reminder(card.approval, card.now)

        async def send(to: Chat) -> tuple[Chat, int]:
            return await self.api.send_message(to, text, reply_parameters=params)

        _, where = await self._call(lambda: self.follow(chat, send))
        if where != chat and reply is not None:
            await self._card_moved(card, where, reply)

    # ---------------------------------------------------------------- used by the update handler
    async def answer(self, query_id: str, text: str, *, alert: bool = False, reply: WebhookReply | None = None) -> None:
        """Answer a press: in the webhook's reply when it has room (`reply.py`), else by a call,
        whose failure (e.g. 'query is too old') must not stop anything."""
        text = render.cut(text, 200)
        if reply is not None and reply.answer(query_id, text, alert):
            return
        try:
            await self.api.answer_callback_query(query_id, text, alert)
        except TelegramError as exc:
            log.warning("telegram: answerCallbackQuery failed: %s", exc.message)

    async def send_edit_link(self, user_id: int, approval: Approval, url: str) -> None:
        """The presser's one-time edit link, in their private chat with the bot (never the group:
        whoever opens the link acts as the presser). TelegramError if they never started the bot."""
        markup = render.markup([[render.url_button("Open the edit form", url)]])
        await self.api.send_message(user_id, render.edit_link_text(approval), reply_markup=markup)

    async def ask_reason(self, chat: int, card_message_id: int, user_id: int, who: str) -> tuple[Chat, int]:
        """Ask the presser why, with ForceReply so their client opens a reply box; returns where
        the question went (the chat, if it moved, and the message id)."""

        async def send(to: Chat) -> tuple[Chat, int]:
            return await self.api.send_message(
                to,
                render.reason_prompt(user_id, who),
                reply_markup=render.reason_markup(),
                reply_parameters=reply_to(card_message_id),
            )

        (_, message_id), where = await self.follow(chat, send)
        return where, message_id
