"""Incoming updates: the webhook route and the one code path shared with `telegram poll`.

A press: authenticate (webhook secret), verify the signed callback_data, then the press use case
(`Inbound.press`: adopt the card, check who may decide, vote, close a second copy of the card)
and answer with what was committed. Its de-duplication marks (update id and callback id) commit
with the decision (or a '+1h' press's extension), in its transaction: a crash before that commit
leaves the update unseen, and its redelivery decides and is answered like the first. A
redelivered press records nothing again, but the use case finishes what its first delivery may
have left undone.

The answer to a press (answerCallbackQuery) rides in the webhook's reply (`reply.py`), not in a
request of its own; polling answers by request. Telegram redelivers an update only when it got
no 2xx, so it never ran that reply: a redelivery through the webhook is answered there too (it
costs no request; Telegram drops a second answer to one press), with what the first delivery
said when this person's vote decided, else what is true now (`_again`), as a toast, never an
alert: the person may have moved on. A redelivery from polling is not answered again (its first
answer was a request).

Reject with a reason: the reject is recorded at once (a veto must never wait on a person
typing), then the presser is asked why with ForceReply; a reply within 10 minutes becomes the
decision's comment (`Inbound.attach_reason`) and every card is synced.
"""

from __future__ import annotations

import dataclasses
import hmac
import logging
from typing import TYPE_CHECKING, Any

from aiohttp import web
from telegram.error import TelegramError

from adapters.telegram import callback, parse, render
from adapters.telegram.reply import WebhookReply
from gateway.core import jsontext
from gateway.core.depth import too_deep
from gateway.core.durations import parse_duration
from gateway.core.errors import GatewayError
from gateway.core.models import Outcome
from gateway.plugin import REASON_PURPOSE, REJECT_PURPOSE, ChannelContext, Press, PressOutcome, PressResult, Reply

if TYPE_CHECKING:
    from adapters.telegram.channel import TelegramChannel

log = logging.getLogger("adapters.telegram")
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
INVALID = "This button is not valid"


def secret_ok(given: str | None, expected: str) -> bool:
    if not given or not expected:
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode())  # non-UTF-8 bytes: 401


def _error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


class TelegramUpdates:
    def __init__(self, ctx: ChannelContext, channel: TelegramChannel) -> None:
        self.ctx, self.channel = ctx, channel

    async def webhook(self, request: web.Request) -> web.Response:
        """Handle one update; the 200 carries the press's answer for Telegram to run (`reply.py`)."""
        if not secret_ok(request.headers.get(SECRET_HEADER), self.channel.settings.webhook_secret):
            return _error(401, "unauthorized", f"missing or wrong {SECRET_HEADER}")
        try:
            raw = await request.read()
            data = None if too_deep(raw) else jsontext.loads(raw, "the update")  # depth first: parsing recurses
        except jsontext.LoneSurrogate as exc:  # a 400 here, before the update is marked seen or stored
            return _error(400, "bad_request", f"not a Telegram update: {exc}")
        except ValueError:  # not JSON (UnicodeDecodeError too)
            data = None
        if not isinstance(data, dict):
            return _error(400, "bad_request", "not a Telegram update: expected a JSON object")
        reply = WebhookReply()
        try:
            await self.handle(data, reply)
        except parse.NotAnUpdate as exc:
            return _error(400, "bad_request", f"not a Telegram update: {exc}")
        return web.json_response(reply.body())

    async def handle(self, data: dict[str, Any], reply: WebhookReply | None = None) -> str:
        """Process one update (the Bot API's JSON) exactly once; returns what happened (for logs
        and tests). NotAnUpdate, before anything is recorded, if a field we read is malformed.
        `reply`: the webhook's, which carries the press's answer; None (polling): answered by a call."""
        item = parse.read_update(data)
        uid = parse.update_id(data)
        key = f"telegram:update:{uid}"
        # a press records its marks with what it commits (`_press`); anything else here first
        fresh = isinstance(item, parse.TelegramPress) or await self.ctx.inbound.first_time(key)
        try:
            if isinstance(item, parse.TelegramPress):
                return await self._press(item, key, reply)
            if isinstance(item, parse.TelegramReply) and fresh:
                return await self._reply(item)
        except GatewayError as exc:
            log.warning("telegram update %s: %s", uid, exc.message)
            return exc.code
        return "ignored" if fresh else "duplicate"

    async def _press(self, p: parse.TelegramPress, update_key: str, reply: WebhookReply | None) -> str:
        inbound = self.ctx.inbound
        marks = (update_key, f"telegram:callback:{p.query_id}")
        button = callback.parse(self.ctx.signer, p.data)
        if button is None:
            fresh = await inbound.first_time(*marks)
            if not fresh:
                return await self._again(p, reply, text=INVALID)
            await self.channel.answer(p.query_id, INVALID, alert=True, reply=reply)
            log.warning("telegram: refused a forged or unknown callback from user %s", p.user_id)
            return "forged"
        press = Press(
            approval_id=button.approval_id,
            outcome=button.outcome,
            actor=parse.actor(p.user_id),
            channel="telegram" if p.chat_id is None else f"telegram:{p.chat_id}",
            card_ref=None if p.chat_id is None or p.message_id is None else parse.card_ref(p.chat_id, p.message_id),
            name=p.who,
            seen=button.seen,
            grant=button.grant,
        )
        if button.action is callback.ButtonAction.EXTEND:  # the marks commit with the extension
            return await self._extend(dataclasses.replace(press, marks=marks), button, p, reply)
        if button.action is not callback.ButtonAction.VOTE or await self._reason_first(press):
            fresh = await inbound.first_time(*marks)  # these commit nothing before the answer
            if not fresh:  # nothing to finish: these commit nothing before the answer
                return await self._again(p, reply, button.approval_id)
            return await self._other(button, press, p, reply)
        verdict = await inbound.press(dataclasses.replace(press, marks=marks))  # the marks commit with the vote
        if verdict.redelivered:  # the use case finished what the first delivery left undone
            return await self._again(p, reply, text=render.again_text(verdict, press.actor))
        ask = verdict.result is PressResult.REJECTED and p.chat_id is not None and p.message_id is not None
        text = render.answer_text(verdict, asks_reason=ask)
        await self.channel.answer(p.query_id, text, alert=verdict.refused, reply=reply)
        if ask:
            await self._ask_reason(verdict, press.actor, p)
        return verdict.result.value

    async def _extend(
        self, press: Press, button: callback.Button, p: parse.TelegramPress, reply: WebhookReply | None
    ) -> str:
        """'+1h': the press's marks commit with the extension, so that an update that died before
        that commit extends on its redelivery, and one redelivered after it extends nothing."""
        verdict = await self.ctx.inbound.extend(press, parse_duration(button.duration or ""))
        if verdict.redelivered:  # extended (or refused) the first time: answered with what is true now
            return await self._again(p, reply, button.approval_id)
        await self.channel.answer(p.query_id, render.answer_text(verdict), alert=verdict.refused, reply=reply)
        return verdict.result.value

    async def _reason_first(self, press: Press) -> bool:
        """A reject under `require_reason`: asked why first, recorded with the reply."""
        if press.outcome is not Outcome.REJECT:
            return False
        approval = await self.ctx.inbound.approval(press.approval_id)
        return approval is not None and approval.policy.require_reason

    async def _again(
        self, p: parse.TelegramPress, reply: WebhookReply | None, approval_id: str = "", text: str = ""
    ) -> str:
        """A redelivered press: through the webhook, answered (free, in the reply) with `text`,
        else with the approval's state now; from polling, not answered again."""
        if reply is not None:
            if not text:
                approval = await self.ctx.inbound.approval(approval_id)
                text = render.state_text(approval, self.ctx.clock.now())
            await self.channel.answer(p.query_id, text, reply=reply)
        return "duplicate"

    async def _other(
        self, button: callback.Button, press: Press, p: parse.TelegramPress, reply: WebhookReply | None
    ) -> str:
        """Edit (a one-time link in the presser's private chat), or a reject that must say why
        (the question first; the reply decides)."""
        inbound = self.ctx.inbound
        if button.action is callback.ButtonAction.EDIT:
            verdict, url = await inbound.edit_link(press)
            if url is None or verdict.approval is None:
                await self.channel.answer(p.query_id, render.answer_text(verdict), alert=True, reply=reply)
                return verdict.result.value
            try:
                await self.channel.send_edit_link(p.user_id, verdict.approval, url)
            except TelegramError as exc:
                log.warning("telegram: could not send an edit link: %s", exc.message)
                await self.channel.answer(
                    p.query_id, "Start a private chat with me first, then press Edit again", alert=True, reply=reply
                )
                return "no_private_chat"
            await self.channel.answer(p.query_id, "I sent you a private link to the edit form", reply=reply)
            return "edit_link"
        verdict = await inbound.may_ask_reason(press)
        if verdict.result is not PressResult.ASK or p.chat_id is None or p.message_id is None:
            await self.channel.answer(p.query_id, render.answer_text(verdict), alert=True, reply=reply)
            return verdict.result.value
        await self.channel.answer(p.query_id, "Reply to my question with your reason to reject", reply=reply)
        await self._ask_reason(verdict, press.actor, p, purpose=REJECT_PURPOSE)
        return "ask"

    async def _ask_reason(
        self, verdict: PressOutcome, actor: str, p: parse.TelegramPress, purpose: str = REASON_PURPOSE
    ) -> None:
        assert verdict.approval is not None and p.chat_id is not None and p.message_id is not None
        try:
            chat, prompt_id = await self.channel.ask_reason(p.chat_id, p.message_id, p.user_id, p.who)
        except TelegramError as exc:
            log.warning("telegram: could not ask for a reject reason: %s", exc.message)
            return
        if chat != p.chat_id:  # the group became a supergroup: the card is there now
            old, new = parse.card_ref(p.chat_id, p.message_id), parse.card_ref(chat, p.message_id)
            await self.ctx.inbound.card_moved(verdict.approval.id, f"telegram:{p.chat_id}", old, new)
        key = parse.prompt_key(chat, prompt_id)
        await self.ctx.inbound.expect_reason(key, verdict.approval.id, actor, purpose=purpose)

    async def _reply(self, r: parse.TelegramReply) -> str:
        reply = Reply(
            key=parse.prompt_key(r.chat_id, r.reply_to_message_id),
            actor=parse.actor(r.user_id),
            text=render.cut(r.text, 1000),
            channel=f"telegram:{r.chat_id}",
        )
        return "reason" if await self.ctx.inbound.attach_reason(reply) else "ignored"
