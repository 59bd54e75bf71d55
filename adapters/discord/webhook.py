"""Discord interactions: `POST /webhooks/discord`.

The signature (Ed25519 over `timestamp + raw body`) and the timestamp's freshness are checked
first: a bad one gets 401 and nothing happens (Discord probes this when the endpoint is saved). An
interaction id is taken once: a replay within the window is refused the same way. A decision's
(or an extension's) id is recorded with it, in its transaction (one cut short before that commit
left nothing, and its replay decides like the first); anything else's before it. PING → PONG.

A press must be answered within Discord's 3 s. A decision (Approve, Reject, a modal's submit) is
committed through `Inbound.press`, waited for at most `ACK_BUDGET`, and answered with a deferred
update (type 6); after the answer is sent, the card is edited through the interaction's webhook
(`PATCH …/messages/@original`) and the presser gets an ephemeral follow-up when their card does
not say it all. "Reject with reason…" and "Edit & approve…" answer with a modal (type 9) once the
presser may decide. A press from a guild outside `discord.guild_ids` is denied like a stranger's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable
from typing import Any, Protocol

from aiohttp import web

from adapters.discord import modals, render
from adapters.discord.parse import (
    ButtonPress,
    ModalSubmit,
    NotOurs,
    Origin,
    Ping,
    UnreadableInteraction,
    make_ref,
    parse,
)
from adapters.discord.verify import is_valid, public_key
from gateway.core import rounds
from gateway.core.durations import parse_duration
from gateway.core.errors import GatewayError, Unauthorized, ValidationError
from gateway.core.models import Approval, Outcome
from gateway.plugin import CardVerb, ChannelContext, Press, PressOutcome, PressResult, error_response

log = logging.getLogger("adapters.discord")
PATH = "/webhooks/discord"
ACK_BUDGET = 2.0  # seconds a decision may take before the deferred answer goes anyway (Discord: 3 s)
PONG, MESSAGE, DEFERRED_UPDATE = 1, 4, 6
EPHEMERAL = 64
NOT_AUTHORISED = "You are not authorised to decide this approval; nothing changed."
_REPLIES = {
    PressResult.DENIED: NOT_AUTHORISED,
    PressResult.UNKNOWN: "This approval no longer exists.",
    PressResult.BUSY: "Too many people pressed at once; please press again.",
    PressResult.DUPLICATE_VOTE: "You already approved; waiting for more approvals.",
}
_COMMITS_MARKS = frozenset({CardVerb.APPROVE, CardVerb.REJECT, CardVerb.GRANT, CardVerb.EXTEND})
# A press whose verdict changed (or re-checked) the card: it is redrawn through @original.
_REDRAW = frozenset(
    {
        PressResult.APPROVED,
        PressResult.REJECTED,
        PressResult.VOTE,
        PressResult.EDITED,
        PressResult.EXTENDED,
        PressResult.STALE,
        PressResult.ALREADY_DECIDED,
    }
)


class Followups(Protocol):
    """What happens after the answer: the interaction's webhook (channel.py)."""

    def spawn(self, work: Awaitable[None]) -> None: ...

    async def edit_original(self, token: str, message: dict[str, Any]) -> None: ...

    async def follow_up(self, token: str, text: str) -> None: ...

    def card(self, approval: Approval) -> dict[str, Any]: ...


def reply_text(verdict: PressOutcome) -> str | None:
    """What to tell the presser, from what was committed; None when their card says it all."""
    approval = verdict.approval
    if verdict.result is PressResult.ALREADY_DECIDED and approval is not None:
        return render.already_text(approval)
    if verdict.result is PressResult.VOTE and approval is not None:
        return f"Your approval is recorded: {render.progress(approval)}."
    if verdict.result in (PressResult.INVALID, PressResult.EXTENDED, PressResult.EDITED, PressResult.STALE):
        return verdict.text() + "."
    return _REPLIES.get(verdict.result)


def _decides(i: ButtonPress | ModalSubmit | NotOurs) -> bool:
    """A vote or an extend (its mark commits with what it writes, so that one that died before
    that commit still counts on its redelivery, and never twice); the modal asks decide nothing."""
    return isinstance(i, ModalSubmit) or (isinstance(i, ButtonPress) and i.verb in _COMMITS_MARKS)


def _replayed() -> web.Response:
    log.warning("discord: interaction refused: replayed")
    return error_response(InvalidInteraction("this interaction was already received"))


def ephemeral(text: str) -> dict[str, Any]:
    return {"type": MESSAGE, "data": {"content": render.cut(text, render.CONTENT_MAX), "flags": EPHEMERAL}}


class InvalidInteraction(Unauthorized):
    """The request is not signed by Discord, or it is stale or replayed."""

    code = "invalid_signature"


class DiscordInteractions:
    def __init__(self, ctx: ChannelContext, out: Followups, key_hex: str, guild_ids: tuple[str, ...]) -> None:
        self._ctx, self._out = ctx, out
        self._key = public_key(key_hex)
        self._guilds = frozenset(guild_ids)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        ts = request.headers.get("X-Signature-Timestamp")
        signature = request.headers.get("X-Signature-Ed25519")
        if not is_valid(self._key, body, ts, signature, self._ctx.clock.now().timestamp()):
            log.warning("discord: interaction refused: bad or stale signature")
            return error_response(InvalidInteraction("invalid or stale Discord signature"))
        try:
            interaction = parse(body, self._ctx.signer)
        except UnreadableInteraction as exc:
            log.warning("discord: unreadable interaction: %s", exc)
            return error_response(ValidationError("interaction", str(exc)))
        if isinstance(interaction, Ping):
            return web.json_response({"type": PONG})
        seen = interaction.interaction_id if isinstance(interaction, NotOurs) else interaction.origin.interaction_id
        marks = (f"discord:interaction:{seen}",) if seen else ()
        if not _decides(interaction) and marks:  # decides nothing: its mark first
            if not await self._ctx.inbound.first_time(*marks):
                return _replayed()
            marks = ()
        if isinstance(interaction, NotOurs):
            return web.json_response(ephemeral("This button is not one of the gateway's."))
        answer, after = await self.interact(interaction, marks)
        if answer is None:  # a decision's mark was recorded before
            return _replayed()
        response = web.json_response(answer)
        await response.prepare(request)
        await response.write_eof()  # the answer is on its way before the follow-ups start
        if after is not None:
            self._out.spawn(after)
        return response

    async def interact(
        self, i: ButtonPress | ModalSubmit, marks: tuple[str, ...] = ()
    ) -> tuple[dict[str, Any] | None, Awaitable[None] | None]:
        """The answer to send now (None: a replay of a decision, refused), and the work to do once
        it is sent. `marks`: a decision's de-duplication keys, committed with it."""
        if why := self._outsider(i.origin):
            denied = await self._ctx.inbound.press(self._press(i, Outcome.REJECT, outsider=why, marks=marks))
            return (None, None) if denied.redelivered else (ephemeral(NOT_AUTHORISED), None)
        if isinstance(i, ModalSubmit):
            return await self._deferred(self._submitted(i, marks), i.origin)
        if i.verb is CardVerb.REASON:
            return await self._ask(i, edit=False), None
        if i.verb is CardVerb.EDIT:
            return await self._ask(i, edit=True), None
        return await self._deferred(self._decide(i, marks), i.origin)

    def _outsider(self, origin: Origin) -> str | None:
        if not origin.guild_id:
            return "a direct message is not in discord.guild_ids"
        if origin.guild_id not in self._guilds:
            return f"Discord server {origin.guild_id} is not in discord.guild_ids"
        return None

    def _press(self, i: ButtonPress | ModalSubmit, outcome: Outcome, **more: Any) -> Press:
        o = i.origin
        where = f"discord:{o.channel_id}" if o.channel_id else "discord"
        card = f"{o.channel_id}:{o.message_id}" if o.channel_id and o.message_id else None
        return Press(i.approval_id, outcome, f"discord:{o.user_id}", where, card_ref=card, name=o.name or None, **more)

    # ---------------------------------------------------------------- modals
    async def _ask(self, p: ButtonPress, *, edit: bool) -> dict[str, Any]:
        """A modal (type 9) once the presser may decide now, else why not (ephemeral)."""
        press = self._press(p, Outcome.APPROVE if edit else Outcome.REJECT)
        verdict = await (self._ctx.inbound.may_edit(press) if edit else self._ctx.inbound.may_ask_reason(press))
        approval = verdict.approval
        if verdict.result is not PressResult.ASK or approval is None:
            return ephemeral(reply_text(verdict) or verdict.text())
        ref = make_ref(self._ctx.signer, approval.id)
        if not edit:
            return modals.reason(approval, ref)
        if modals.fits(approval):
            return modals.edit(approval, ref, rounds.tag(self._ctx.signer, approval))
        verdict, url = await self._ctx.inbound.edit_link(press)  # too many fields for a modal
        if url is None:
            return ephemeral(reply_text(verdict) or verdict.text())
        return ephemeral(f"Edit and approve on this one-time page: {url}")

    async def _submitted(self, sub: ModalSubmit, marks: tuple[str, ...]) -> PressOutcome:
        if sub.verb is CardVerb.REASON:
            comment = sub.values.get(modals.REASON_INPUT, "").strip()
            if not comment:
                return await self._unpressed(PressOutcome(PressResult.INVALID, error="Please write a reason"), marks)
            return await self._ctx.inbound.press(self._press(sub, Outcome.REJECT, comment=comment, marks=marks))
        approval = await self._ctx.inbound.approval(sub.approval_id)
        if approval is None:
            return await self._unpressed(PressOutcome(PressResult.UNKNOWN), marks)
        try:
            args = modals.edited(approval, sub.values)
        except GatewayError as exc:
            return await self._unpressed(PressOutcome(PressResult.INVALID, approval, error=exc.message), marks)
        if args is None:
            refused = PressOutcome(PressResult.INVALID, approval, error="This approval does not allow edits")
            return await self._unpressed(refused, marks)
        press = self._press(sub, Outcome.APPROVE, args=args, seen=sub.arg or None, marks=marks)
        return await self._ctx.inbound.press(press)

    async def _unpressed(self, verdict: PressOutcome, marks: tuple[str, ...]) -> PressOutcome:
        """A submit or an extend refused before it became a press (nothing else recorded): its
        marks on their own, so that a replay of it is refused as a replay, like any other."""
        if not await self._ctx.inbound.refused(marks):
            return dataclasses.replace(verdict, redelivered=True)
        return verdict

    # ---------------------------------------------------------------- decisions
    async def _decide(self, p: ButtonPress, marks: tuple[str, ...]) -> PressOutcome:
        if p.verb is CardVerb.EXTEND:
            try:
                duration = parse_duration(p.arg)
            except ValueError:  # refused before it became a press: its mark on its own
                return await self._unpressed(
                    PressOutcome(PressResult.INVALID, error=f"not a duration: {p.arg!r}"), marks
                )
            return await self._ctx.inbound.extend(self._press(p, Outcome.APPROVE, marks=marks), duration)
        if p.verb is CardVerb.GRANT:  # "Approve · 1h": the policy checks the offer, as the API's
            offer, _, tag = p.arg.partition(".")
            press = self._press(p, Outcome.APPROVE, seen=tag or None, grant=offer, marks=marks)
            return await self._ctx.inbound.press(press)
        if p.verb is CardVerb.APPROVE:
            return await self._ctx.inbound.press(self._press(p, Outcome.APPROVE, seen=p.arg or None, marks=marks))
        return await self._ctx.inbound.press(self._press(p, Outcome.REJECT, marks=marks))

    async def _deferred(
        self, work: Awaitable[PressOutcome], origin: Origin
    ) -> tuple[dict[str, Any] | None, Awaitable[None] | None]:
        """Commit within the budget if it can (usually milliseconds); answer "deferred update"
        either way, and redraw the card and tell the presser once the verdict is in. None: a
        replay, known within the budget (refused, nothing after)."""
        task = asyncio.ensure_future(work)
        await asyncio.wait({task}, timeout=ACK_BUDGET)
        if task.done() and not task.cancelled() and task.exception() is None and task.result().redelivered:
            return None, None
        return {"type": DEFERRED_UPDATE}, self._after(task, origin)

    async def _after(self, task: asyncio.Future[PressOutcome], origin: Origin) -> None:
        try:
            verdict = await task
        except Exception:
            log.exception("discord: a press failed")
            await self._out.follow_up(origin.token, "Something went wrong; nothing changed. Please press again.")
            return
        if verdict.redelivered:  # a replay, known after the answer: nothing more
            return
        if verdict.result in _REDRAW and verdict.approval is not None:
            await self._out.edit_original(origin.token, self._out.card(verdict.approval))
        text = reply_text(verdict)
        if text:
            await self._out.follow_up(origin.token, text)
