"""The one I/O class: a python-telegram-bot `Bot` (base_url from config) behind the Channel protocol.

Telegram errors become `DeliveryError`s for the outbox. Order matters: `RetryAfter` is not a
`NetworkError`, while `BadRequest` and `TimedOut` are, so they are tested first.
"""

from __future__ import annotations

import asyncio
import logging
import os
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, TypeVar

from aiohttp import web
from telegram import Bot, ForceReply, Message, ReplyParameters
from telegram.constants import ParseMode
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Forbidden,
    InvalidToken,
    RetryAfter,
    TelegramError,
)
from telegram.warnings import PTBDeprecationWarning

from adapters.telegram import once, render
from adapters.telegram.callback import CallbackTooLong
from adapters.telegram.parse import card_ref, chat_id, parse_ref
from adapters.telegram.request import AiohttpRequest
from adapters.telegram.updates import press_names
from gateway.core.models import Approval, Event, NewEvent
from gateway.delivery.channels import DeliveryError
from gateway.delivery.outbox import ATTEMPT_EVENT

if TYPE_CHECKING:
    from adapters.telegram.updates import TelegramUpdates
    from gateway.runtime import Runtime

log = logging.getLogger("adapters.telegram")
# PTB 22 warns on every RetryAfter unless time periods are opted in as timedelta (its future default).
os.environ.setdefault("PTB_TIMEDELTA", "true")
T = TypeVar("T")
WEBHOOK_PATH = "/webhooks/telegram"
ALLOWED_UPDATES = ("callback_query", "message")
START_TIMEOUT = 5.0  # getMe at start-up: a slow Bot API must not hold the gateway's start
POOL_SIZE = 16  # connections to the Bot API
POSTS_IN_FLIGHT = 8  # sendMessage calls for cards at a time: the rest of the pool edits and answers
READ_TIMEOUT = 25.0  # seconds; under the outbox's cut at half its lease (30 s by default)


def retry_after_seconds(exc: RetryAfter) -> float:
    """The server's delay, exactly (PTB 22 warns when the attribute is read as an int)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def not_modified(exc: TelegramError) -> bool:
    return isinstance(exc, BadRequest) and "message is not modified" in exc.message.lower()


def delivery_error(exc: TelegramError) -> DeliveryError:
    """Map a Bot API error: flood control and network trouble retry, the rest is terminal.
    Whether Telegram may have acted anyway (a read timeout) is carried for the outbox."""
    message, sent = f"telegram: {exc.message}", not once.unsent(exc)
    if isinstance(exc, RetryAfter):
        return DeliveryError(message, transient=True, retry_after=retry_after_seconds(exc), unsent=True)
    if isinstance(exc, Forbidden | BadRequest | InvalidToken | ChatMigrated):
        return DeliveryError(message, transient=False, unsent=True)
    # 5xx, TimedOut, connection errors; Conflict and the like
    return DeliveryError(message, transient=True, unsent=not sent, uncertain=sent)


class TelegramChannel:
    kind = "telegram"

    def __init__(self, runtime: Runtime) -> None:
        from adapters.telegram.updates import TelegramUpdates

        self.runtime = runtime
        self.settings = runtime.settings.telegram
        self.bot = Bot(
            self.settings.bot_token,
            base_url=self.settings.base_url,
            # A sendMessage cut short by a timeout may have posted the card, which is then never
            # posted again (`uncertain`): wait long for Telegram's answer (PTB's default is 5 s).
            request=AiohttpRequest(POOL_SIZE, READ_TIMEOUT),
            get_updates_request=AiohttpRequest(1, 40),
        )
        self.updates: TelegramUpdates = TelegramUpdates(runtime, self)
        self._posting = asyncio.Semaphore(POSTS_IN_FLIGHT)

    async def start(self) -> None:
        try:
            async with asyncio.timeout(START_TIMEOUT):
                await self.bot.initialize()
        except (TelegramError, TimeoutError) as exc:  # cards are retried by the outbox; do not block start-up
            why = exc.message if isinstance(exc, TelegramError) else "timed out"
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

    async def _names(self, approval: Approval) -> Mapping[str, str]:
        """Display names for the decision line; a card with no decision shows none (no read)."""
        return {} if approval.decision is None else await self.updates.names(approval.id)

    # ---------------------------------------------------------------- Channel protocol
    async def post_card(self, target: str, approval: Approval, now: datetime) -> str:
        events = await self.runtime.store.list_events(approval.id)
        text = render.render_card(approval, now, press_names(events) if approval.decision else {})
        try:
            markup = render.keyboard(approval, self.runtime.signer)
        except CallbackTooLong as exc:
            raise DeliveryError(f"telegram: {exc}", transient=False, unsent=True) from None

        async def send(chat: int | str) -> Message:
            return await self.bot.send_message(chat, text, parse_mode=ParseMode.HTML, reply_markup=markup)

        # At most one card per approval and chat (see once.py): a durable marker before the call.
        # Only POSTS_IN_FLIGHT posts hold a marker at a time, so that a marked post goes out at
        # once instead of queueing for a connection (a crash there would lose a card never sent).
        address = f"telegram:{target}"
        earlier = once.unresolved_attempt(events, address)
        async with self._posting:
            return await self._post_once(approval, target, address, earlier, send, now)

    async def _post_once(
        self,
        approval: Approval,
        target: str,
        address: str,
        earlier: Event | None,
        send: Callable[[int | str], Awaitable[Message]],
        now: datetime,
    ) -> str:
        if earlier is not None:
            if not self.settings.resend_uncertain:
                raise DeliveryError(
                    f"telegram: the card may already be in the chat (a sendMessage at {earlier.at.isoformat()}"
                    " had no recorded answer); not sent again. A press on it adopts it;"
                    " `hitl-gateway cards resend` posts a new one",
                    transient=False,
                    uncertain=True,
                )
            log.warning("telegram: posting the card of %s again after an unanswered attempt", approval.id)
        await self.runtime.store.append_events([NewEvent(approval.id, ATTEMPT_EVENT, now, channel=address)])
        chat = chat_id(target)
        try:
            message = await send(chat)
        except ChatMigrated as exc:  # the group became a supergroup: follow it
            moved = exc.new_chat_id
            log.info("telegram: chat %s migrated to %s; posting there", chat, moved)
            message = await self._call(lambda: send(moved))
        except TelegramError as exc:
            raise delivery_error(exc) from None
        return card_ref(message.chat.id, message.message_id)

    async def update_card(self, target: str, ref: str, approval: Approval, now: datetime) -> None:
        chat, message_id = parse_ref(ref)
        text = render.render_card(approval, now, await self._names(approval))
        markup = None if approval.status.final else render.keyboard(approval, self.runtime.signer)
        try:
            await self.bot.edit_message_text(
                text, chat_id=chat, message_id=message_id, parse_mode=ParseMode.HTML, reply_markup=markup
            )
        except TelegramError as exc:
            if not_modified(exc):
                return
            raise delivery_error(exc) from None

    async def send_reminder(self, target: str, ref: str | None, approval: Approval, now: datetime) -> None:
        chat, reply = (chat_id(target), None) if ref is None else parse_ref(ref)
        params = None if reply is None else ReplyParameters(reply, allow_sending_without_reply=True)
        text = render.render_reminder(approval, now)
        await self._call(lambda: self.bot.send_message(chat, text, parse_mode=ParseMode.HTML, reply_parameters=params))

    # ---------------------------------------------------------------- used by the update handler
    async def answer(self, query_id: str, text: str, *, alert: bool = False) -> None:
        """Answer a press; a failure (e.g. 'query is too old') must not stop the decision."""
        try:
            await self.bot.answer_callback_query(query_id, text=render.cut(text, 200), show_alert=alert)
        except TelegramError as exc:
            log.warning("telegram: answerCallbackQuery failed: %s", exc.message)

    async def ask_reason(self, chat: int, card_message_id: int, user_id: int, who: str) -> int:
        """Ask the presser why, with ForceReply so their client opens a reply box."""
        message = await self.bot.send_message(
            chat,
            render.reason_prompt(user_id, who),
            parse_mode=ParseMode.HTML,
            reply_markup=ForceReply(selective=True, input_field_placeholder="Reason for rejecting"),
            reply_parameters=ReplyParameters(card_message_id, allow_sending_without_reply=True),
        )
        return message.message_id
