"""Incoming updates: the webhook route and the one code path shared with `telegram poll`.

Order for a press: authenticate (webhook secret), de-duplicate (update id, then callback id),
verify the signed callback_data, answer the press, then decide through the service (the first
decision wins). A stranger's press changes nothing and is recorded as a `denied` event.
A redelivered press is not answered again, but its decision is re-driven: the first delivery
may have died after the de-duplication mark and before the decision's commit.

Reject with a reason: the reject is recorded at once (a veto must never wait on a person
typing), then the presser is asked why with ForceReply. A reply within 10 minutes is attached
to the decision as its comment (`Service.attach_comment`) and every card is synced.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from aiohttp import web
from telegram import Update
from telegram.error import TelegramError

from adapters.telegram import callback, once, parse, render
from gateway.core import policy as rules
from gateway.core.depth import too_deep
from gateway.core.errors import AlreadyDecided, Forbidden, GatewayError, NotAnApprover, RequesterCannotDecide
from gateway.core.models import Approval, Event, NewEvent, NewOutbox, OutboxKind, Outcome, Status, Vote
from gateway.delivery.channels import DeliveryError
from gateway.store import Prompt

if TYPE_CHECKING:
    from adapters.telegram.channel import TelegramChannel
    from gateway.runtime import Runtime

log = logging.getLogger("adapters.telegram")
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
REASON_WINDOW = timedelta(minutes=10)
PRESS_EVENT = "telegram_press"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a press will do, decided before answering it: the toast text and the next step."""

    text: str
    decide: bool = False
    denied: str | None = None  # why the presser may not decide


def precheck(
    approval: Approval,
    actor: str,
    outcome: Outcome,
    allowlist: tuple[str, ...],
    now: datetime,
    names: Mapping[str, str] | None = None,
) -> Verdict:
    """Pure: the answer to show for a press, computed with the same rules the service applies."""
    if approval.status.final:
        message = rules.already_decided(approval).message
        d = approval.decision
        if d is not None and names and d.decided_by in names:
            message = message.replace(f"by {d.decided_by}", f"by {names[d.decided_by]}")
        return Verdict(render.cut(message[:1].upper() + message[1:], 200))
    try:
        rules.check_may_decide(actor, approval, allowlist)
    except (NotAnApprover, RequesterCannotDecide) as exc:
        return Verdict("Not authorised", denied=exc.message)
    transition = rules.apply_vote(approval, Vote(actor, outcome, now))
    return Verdict(render.answer_text(transition.event, dict(transition.data)), decide=True)


def secret_ok(given: str | None, expected: str) -> bool:
    if not given or not expected:
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode())  # non-UTF-8 bytes: 401


class TelegramUpdates:
    def __init__(self, runtime: Runtime, channel: TelegramChannel) -> None:
        self.rt, self.channel = runtime, channel

    # ---------------------------------------------------------------- webhook
    async def webhook(self, request: web.Request) -> web.Response:
        if not secret_ok(request.headers.get(SECRET_HEADER), self.rt.settings.telegram.webhook_secret):
            return web.json_response(
                {"error": {"code": "unauthorized", "message": f"missing or wrong {SECRET_HEADER}"}}, status=401
            )
        try:
            raw = await request.read()
            data = None if too_deep(raw) else json.loads(raw)  # depth first: parsing recurses
            update = Update.de_json(data, self.channel.bot) if isinstance(data, dict) else None
        except (ValueError, KeyError, TypeError, AttributeError):  # not an Update
            update = None
        if update is None:
            return web.json_response({"error": {"code": "bad_request", "message": "not a Telegram update"}}, status=400)
        await self.handle(update)
        return web.json_response({"ok": True})

    # ---------------------------------------------------------------- the shared code path
    async def handle(self, update: Update) -> str:
        """Process one update exactly once; returns what happened (for logs and tests)."""
        fresh = await self.rt.store.remember_inbound(f"telegram:update:{update.update_id}", self.rt.clock.now())
        item = parse.read_update(update)
        if not fresh:
            return await self._redelivered(item) if isinstance(item, parse.Press) else "duplicate"
        try:
            if isinstance(item, parse.Press):
                return await self._press(item)
            if isinstance(item, parse.Reply):
                return await self._reply(item)
        except GatewayError as exc:
            log.warning("telegram update %s: %s", update.update_id, exc.message)
            return exc.code
        return "ignored"

    async def _press(self, p: parse.Press) -> str:
        rt, now = self.rt, self.rt.clock.now()
        if not await rt.store.remember_inbound(f"telegram:callback:{p.query_id}", now):
            return await self._redelivered(p)
        button = callback.parse(rt.signer, p.data)
        if button is None:
            await self.channel.answer(p.query_id, "This button is not valid", alert=True)
            log.warning("telegram: refused a forged or unknown callback from user %s", p.user_id)
            return "forged"
        approval = await rt.store.get_approval(button.approval_id)
        if approval is None:
            await self.channel.answer(p.query_id, "This approval no longer exists", alert=True)
            return "unknown"
        recorded = await self._adopt(approval, p)
        actor, where = parse.actor(p.user_id), "telegram" if p.chat_id is None else f"telegram:{p.chat_id}"
        names = await self.names(approval.id) if approval.status.final else None
        verdict = precheck(approval, actor, button.outcome, rt.service.allowlist(actor), now, names)
        await self.channel.answer(p.query_id, verdict.text, alert=not verdict.decide)
        if verdict.denied is not None:  # on the record as `denied` (bounded per person), not as a press
            await rt.service.record_denied(approval.id, actor, where, verdict.denied)
            return "denied"
        data = {"who": p.who, "outcome": button.outcome.value, "message_id": p.message_id}
        await rt.store.append_events([NewEvent(approval.id, PRESS_EVENT, now, actor, where, data)])
        if not verdict.decide:
            await self._converge_orphan(approval.id, p, recorded)
            return "already_decided"
        result = await self._decide(approval.id, button.outcome, actor, where, p)
        await self._converge_orphan(approval.id, p, recorded)
        return result

    async def _adopt(self, approval: Approval, p: parse.Press) -> str | None:
        """A press proves where a card is (callbacks come only from the bot's own messages). If
        its post had no recorded answer (`uncertain`, or a crash mid-call), record the card now
        and sync it, so that it shows the outcome like any other card (see once.py). Returns the
        ref of the card recorded for the press's chat, if any."""
        if p.chat_id is None or p.message_id is None:
            return None
        address = f"telegram:{p.chat_id}"
        if address not in approval.channels and address not in approval.policy.escalate_to:
            return None
        card = await self.rt.store.get_card(approval.id, address)
        if card is not None and card.ref is not None:
            return card.ref
        now, ref = self.rt.clock.now(), parse.card_ref(p.chat_id, p.message_id)
        adopted = NewEvent(approval.id, once.ADOPTED, now, channel=address, data={"ref": ref})
        if not await self.rt.store.adopt_card(approval.id, address, ref, now, [adopted]):
            card = await self.rt.store.get_card(approval.id, address)  # recorded meanwhile
            return None if card is None else card.ref
        log.info("telegram: adopted the card of %s found by a press", approval.id)
        await self.rt.store.enqueue_outbox([NewOutbox(approval.id, address, OutboxKind.SYNC)], now)
        self.rt.outbox.notify()
        return ref

    async def _converge_orphan(self, approval_id: str, p: parse.Press, recorded: str | None) -> None:
        """A press on a card that is not the recorded one: a duplicate post (the Bot API has no
        idempotency key, so a post that timed out or a crash between send and commit can leave
        one). Once the approval is decided, edit that message too, so no live buttons remain."""
        if p.chat_id is None or p.message_id is None:
            return
        approval = await self.rt.store.get_approval(approval_id)
        if approval is None or not approval.status.final:
            return
        address, ref = f"telegram:{p.chat_id}", parse.card_ref(p.chat_id, p.message_id)
        if recorded is None or recorded == ref:
            return  # no card of this chat, or the recorded one: the outbox syncs it
        try:
            await self.channel.update_card(str(p.chat_id), ref, approval, self.rt.clock.now())
        except DeliveryError as exc:
            log.warning("telegram: could not close a duplicate card of %s: %s", approval_id, exc)
            return
        await self.rt.store.append_events(
            [NewEvent(approval_id, "orphan_card_synced", self.rt.clock.now(), channel=address, data={"ref": ref})]
        )

    async def _redelivered(self, p: parse.Press) -> str:
        """A press seen before. Telegram redelivers only what got no 2xx, so the first delivery
        may have died after it was remembered and before its decision was committed: finish the
        decision quietly (it is idempotent: the first decision wins, a vote counts once)."""
        button = callback.parse(self.rt.signer, p.data)
        approval = None if button is None else await self.rt.store.get_approval(button.approval_id)
        if button is None or approval is None:
            return "duplicate"
        await self._adopt(approval, p)  # the converge below is for a first delivery only
        actor, where = parse.actor(p.user_id), "telegram" if p.chat_id is None else f"telegram:{p.chat_id}"
        verdict = precheck(approval, actor, button.outcome, self.rt.service.allowlist(actor), self.rt.clock.now())
        if not verdict.decide or any(v.approver == actor and v.outcome is button.outcome for v in approval.votes):
            return "duplicate"
        return await self._decide(approval.id, button.outcome, actor, where, p)

    async def _decide(self, approval_id: str, outcome: Outcome, actor: str, where: str, p: parse.Press) -> str:
        try:
            after = await self.rt.service.decide(approval_id, outcome, actor, channel=where)
        except AlreadyDecided:
            return "already_decided"  # lost a race; the card sync shows the winner
        except (NotAnApprover, RequesterCannotDecide) as exc:
            await self.rt.service.record_denied(approval_id, actor, where, exc.message)
            return "denied"
        won = after.decision is not None and after.decision.decided_by == actor
        if after.status is Status.REJECTED and won and p.chat_id is not None and p.message_id is not None:
            await self._ask_reason(after.id, actor, p)
        return after.status.value if after.status.final else "vote"

    async def _ask_reason(self, approval_id: str, actor: str, p: parse.Press) -> None:
        assert p.chat_id is not None and p.message_id is not None
        try:
            prompt_id = await self.channel.ask_reason(p.chat_id, p.message_id, p.user_id, p.who)
        except TelegramError as exc:
            log.warning("telegram: could not ask for a reject reason: %s", exc.message)
            return
        now = self.rt.clock.now()
        key = parse.prompt_key(p.chat_id, prompt_id)
        await self.rt.store.save_prompt(Prompt(key, approval_id, actor, "reject_reason", now, now + REASON_WINDOW))

    async def _reply(self, r: parse.Reply) -> str:
        actor, now = parse.actor(r.user_id), self.rt.clock.now()
        prompt = await self.rt.store.take_prompt(parse.prompt_key(r.chat_id, r.reply_to_message_id), actor, now)
        if prompt is None:
            return "ignored"
        try:
            await self.rt.service.attach_comment(
                prompt.approval_id, actor, render.cut(r.text, 1000), channel=f"telegram:{r.chat_id}"
            )
        except Forbidden as exc:
            log.warning("telegram: reason not attached: %s", exc.message)
            return "ignored"
        return "reason"

    # ---------------------------------------------------------------- display names
    async def names(self, approval_id: str) -> Mapping[str, str]:
        """Display names ('@alice') of people who pressed this approval's buttons."""
        return press_names(await self.rt.store.list_events(approval_id))


def press_names(events: Iterable[Event]) -> Mapping[str, str]:
    """Display names by approver id, from the press events (pure)."""
    out: dict[str, str] = {}
    for e in events:
        who: Any = e.data.get("who") if e.kind == PRESS_EVENT else None
        if e.actor and isinstance(who, str):
            out[e.actor] = who
    return out
