"""Slack interactions: ONE handler for the HTTP webhook and Socket Mode (`socket.py`).

`InteractionHandler.interact` decides: a press goes through the press use case (`Inbound.press`:
one group-committed transaction, which also queues the card syncs in the outbox) and returns the
ack's body only after the commit, so a press acked is a press kept even if the process dies right
after. The presser's ephemeral reply says what was committed; it and `views.open` run after.

`POST /webhooks/slack/interactions` (`handle`) checks the signature on the raw bytes first (401,
nothing happens), then acks with `interact`'s body as its reply.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from typing import Any, Protocol

from aiohttp import web

from adapters.slack import amend, render
from adapters.slack.parse import (
    BadPayload,
    EditSubmission,
    Ignored,
    Interaction,
    SlackPress,
    Submission,
    make_ref,
    parse,
)
from adapters.slack.teams import Workspaces, outsider
from adapters.slack.verify import is_valid
from gateway.core.errors import Unauthorized, ValidationError
from gateway.core.models import Outcome
from gateway.plugin import CardVerb, ChannelContext, Press, PressOutcome, PressResult, error_response

log = logging.getLogger("adapters.slack")
PATH = "/webhooks/slack/interactions"
NOT_AUTHORISED = "You are not authorised to decide this approval; nothing changed."
_REPLIES = {
    PressResult.DENIED: NOT_AUTHORISED,
    PressResult.UNKNOWN: "This approval no longer exists.",
    PressResult.BUSY: "Too many people pressed at once; please press again.",
    PressResult.DUPLICATE_VOTE: "You already approved; waiting for more approvals.",
}
Ack = dict[str, Any] | None  # the ack's body (a modal's errors), or None for an empty ack
# the buttons that decide or extend: their marks commit with what they write
_COMMITS_MARKS = frozenset({CardVerb.APPROVE, CardVerb.REJECT, CardVerb.GRANT, CardVerb.EXTEND})


class Responder(Protocol):
    def spawn(self, work: Coroutine[Any, Any, None]) -> None: ...

    async def respond(self, response_url: str, text: str) -> None: ...

    async def open_modal(self, trigger_id: str, view: dict[str, Any], response_url: str) -> None: ...


def reply_text(verdict: PressOutcome) -> str | None:
    """What to tell the presser, from what was committed; None when their card says it all."""
    approval = verdict.approval
    if verdict.result is PressResult.ALREADY_DECIDED and approval is not None:
        return render.already_text(approval)
    if verdict.result is PressResult.VOTE and approval is not None:
        return f"Your approval is recorded: {render.progress(approval)}."
    if verdict.result in (
        PressResult.INVALID,
        PressResult.EXTENDED,
        PressResult.EDITED,
        PressResult.STALE,
    ):
        return verdict.text() + "."
    return _REPLIES.get(verdict.result)


class InteractionHandler:
    def __init__(
        self, ctx: ChannelContext, responder: Responder, signing_secret: str, workspaces: Workspaces | None = None
    ) -> None:
        self._ctx, self._out, self._secret = ctx, responder, signing_secret
        self._workspaces = workspaces  # None: no workspace check (a handler built alone, in tests)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        ts = request.headers.get("X-Slack-Request-Timestamp")
        signature = request.headers.get("X-Slack-Signature")
        if not is_valid(self._secret, body, ts, signature, self._ctx.clock.now().timestamp()):
            log.warning("slack: interaction refused: bad or stale signature")
            return error_response(InvalidSignature("invalid or stale Slack signature"))
        try:
            interaction = parse(body, self._ctx.signer)
        except BadPayload as exc:
            log.warning("slack: unreadable interaction: %s", exc)
            return error_response(ValidationError("payload", str(exc)))
        # Slack sends an interaction here once, but a signed request is valid for its whole
        # window: a copy of one (a proxy's log) must extend or decide nothing more. A press's or
        # a modal submission's trigger_id is unique per interaction: its mark, committed as
        # Socket Mode's envelope id.
        trigger = "" if isinstance(interaction, Ignored) else interaction.trigger_id
        ack = await self.interact(interaction, marks=(f"slack:trigger:{trigger}",) if trigger else ())
        return web.Response(status=200) if ack is None else web.json_response(ack)

    async def interact(self, interaction: Interaction, *, marks: tuple[str, ...] = ()) -> Ack:
        """Decide on one interaction; return the ack's body once the decision is committed.
        `marks`: the delivery's de-duplication keys (Socket Mode's envelope id; the webhook's
        press or modal submission, its trigger_id, against a replay of its signed request). A
        vote commits them with itself, so that an envelope that died before that commit decides
        on its redelivery; anything else records them first. A '+1h' commits them with its
        extension, like a vote: one that died before that commit extends on its redelivery,
        never twice. A redelivered one (Slack sends an envelope again when its ack was lost)
        records nothing twice and says nothing about the presser's own decision again."""
        if not isinstance(interaction, Ignored) and (why := await self._outsider(interaction)):
            return await self._refuse(interaction, why, marks)
        if isinstance(interaction, SlackPress) and interaction.verb in _COMMITS_MARKS:
            return await self._press(interaction, marks)
        if isinstance(interaction, Submission):
            return await self._submission(interaction, marks)
        if isinstance(interaction, EditSubmission):  # the card, synced, shows the change
            return (await amend.submit_edit(self._ctx, interaction, marks))[0]
        if marks:  # decides nothing (opens a modal): the marks first
            await self._ctx.inbound.first_time(*marks)
        if isinstance(interaction, SlackPress):
            return await self._press(interaction, ())
        return None

    async def _outsider(self, interaction: SlackPress | Submission | EditSubmission) -> str | None:
        """Why the presser's workspace may not press here (teams.py), or None."""
        if self._workspaces is None:
            return None
        return outsider(await self._workspaces.pinned(), interaction.teams)

    async def _refuse(
        self, interaction: SlackPress | Submission | EditSubmission, why: str, marks: tuple[str, ...]
    ) -> Ack:
        """A press from another workspace: denied like a stranger's (on the record, bounded per
        person and approval, its marks with it), whatever its button or modal; the presser reads
        why not."""
        press = Press(
            interaction.approval_id,
            Outcome.REJECT,
            f"slack:{interaction.user_id}",
            _where(interaction.channel_id),
            outsider=why,
            marks=marks,
        )
        await self._ctx.inbound.press(press)
        if isinstance(interaction, SlackPress):
            self._out.spawn(self._out.respond(interaction.response_url, NOT_AUTHORISED))
            return None
        return _modal_error(NOT_AUTHORISED)

    # ---------------------------------------------------------------- buttons
    async def _press(self, press: SlackPress, marks: tuple[str, ...]) -> Ack:
        """A button; a vote's or an extend's `marks` commit with it, the others' were recorded."""
        if press.verb == CardVerb.REASON:
            reply = await self._open_reason(press)
        elif press.verb == CardVerb.EDIT:
            verdict = await amend.open_edit(self._ctx, self._out, press)
            reply = reply_text(verdict) if verdict is not None else None
        elif press.verb == CardVerb.EXTEND:  # at most once: the marks commit with the extension
            verdict = await amend.extend(self._ctx, press, marks)
            reply = None if verdict.redelivered else reply_text(verdict)  # a redelivery: answered the first time
        elif press.verb == CardVerb.GRANT:  # "Approve · 1h": the policy checks the offer, as the API's
            offer, _, tag = press.arg.partition(".")
            reply = await self._decide(
                press.approval_id,
                Outcome.APPROVE,
                press.user_id,
                press.channel_id,
                marks,
                seen=tag or None,
                grant=offer,
            )
        else:
            outcome = Outcome.APPROVE if press.verb == CardVerb.APPROVE else Outcome.REJECT
            seen = (press.arg or None) if outcome is Outcome.APPROVE else None  # the round tag
            reply = await self._decide(press.approval_id, outcome, press.user_id, press.channel_id, marks, seen=seen)
        if reply:  # the commit is done: the reply is slow work, after the ack
            self._out.spawn(self._out.respond(press.response_url, reply))
        return None

    async def _open_reason(self, press: SlackPress) -> str | None:
        """Check that the presser may decide now, then open the modal after the ack."""
        verdict = await self._ctx.inbound.may_ask_reason(
            Press(press.approval_id, Outcome.REJECT, f"slack:{press.user_id}", _where(press.channel_id))
        )
        if verdict.result is not PressResult.ASK or verdict.approval is None:
            return reply_text(verdict)
        view = render.reason_modal(verdict.approval, make_ref(self._ctx.signer, press.approval_id), press.channel_id)
        self._out.spawn(self._out.open_modal(press.trigger_id, view, press.response_url))
        return None

    # ---------------------------------------------------------------- the modal
    async def _submission(self, sub: Submission, marks: tuple[str, ...]) -> Ack:
        if not sub.comment:  # nothing recorded: a redelivery is answered the same
            return _modal_error("Please write a reason.")
        reply = await self._decide(sub.approval_id, Outcome.REJECT, sub.user_id, sub.channel_id, marks, sub.comment)
        return None if not reply else _modal_error(reply)  # an empty ack closes the modal

    # ---------------------------------------------------------------- the decision
    async def _decide(
        self,
        approval_id: str,
        outcome: Outcome,
        user_id: str,
        channel_id: str,
        marks: tuple[str, ...],
        comment: str | None = None,
        *,
        seen: str | None = None,
        grant: str | None = None,
    ) -> str | None:
        """Commit the vote, with the delivery's `marks`; return what to tell the presser, or None
        when the card says it all."""
        actor = f"slack:{user_id}"
        press = Press(
            approval_id,
            outcome,
            actor,
            _where(channel_id),
            comment=comment,
            seen=seen,
            grant=grant,
            marks=marks,
        )
        verdict = await self._ctx.inbound.press(press)
        if verdict.redelivered:  # the first delivery's own vote or decision: answer as it would have
            d = verdict.approval.decision if verdict.approval else None
            if verdict.result is PressResult.ALREADY_DECIDED and d is not None and d.decided_by == actor:
                return None
            if verdict.result is PressResult.DUPLICATE_VOTE:
                verdict = PressOutcome(PressResult.VOTE, verdict.approval)
        return reply_text(verdict)


def _where(channel_id: str) -> str:
    return f"slack:{channel_id}" if channel_id else "slack"


class InvalidSignature(Unauthorized):
    """The request is not signed by Slack, or the signature is stale."""

    code = "invalid_signature"


def _modal_error(text: str) -> dict[str, Any]:
    return {"response_action": "errors", "errors": {render.REASON_BLOCK: text[:150]}}
