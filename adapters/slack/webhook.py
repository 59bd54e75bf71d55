"""POST /webhooks/slack/interactions: verify, commit, ack, then the slow work.

Order matters. The signature is checked on the raw bytes (401, nothing happens). A press goes
through the press use case (`Inbound.press`: one group-committed transaction, which also queues
the card syncs in the outbox) BEFORE the 200 is returned, so a press acked is a press kept even
if the process dies right after. The presser's ephemeral reply says what was committed; it and
`views.open` run after the ack.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from typing import Any, Protocol

from aiohttp import web

from adapters.slack import amend, render
from adapters.slack.parse import BadPayload, EditSubmission, Press, Submission, make_ref, parse
from adapters.slack.verify import is_valid
from gateway.core.errors import Unauthorized, ValidationError
from gateway.core.models import Outcome
from gateway.delivery.spec import ChannelContext
from gateway.http.middleware import error_response
from gateway.service import presses

log = logging.getLogger("adapters.slack")
PATH = "/webhooks/slack/interactions"
NOT_AUTHORISED = "You are not authorised to decide this approval; nothing changed."
_REPLIES = {
    presses.PressResult.DENIED: NOT_AUTHORISED,
    presses.PressResult.UNKNOWN: "This approval no longer exists.",
    presses.PressResult.BUSY: "Too many people pressed at once; please press again.",
    presses.PressResult.DUPLICATE_VOTE: "You already approved; waiting for more approvals.",
}


class Responder(Protocol):
    def spawn(self, work: Coroutine[Any, Any, None]) -> None: ...

    async def respond(self, response_url: str, text: str) -> None: ...

    async def open_modal(self, trigger_id: str, view: dict[str, Any], response_url: str) -> None: ...


def reply_text(verdict: presses.Verdict) -> str | None:
    """What to tell the presser, from what was committed; None when their card says it all."""
    approval = verdict.approval
    if verdict.result is presses.PressResult.ALREADY_DECIDED and approval is not None:
        return render.already_text(approval)
    if verdict.result is presses.PressResult.VOTE and approval is not None:
        return f"Your approval is recorded: {render.progress(approval)}."
    if verdict.result in (presses.PressResult.INVALID, presses.PressResult.EXTENDED, presses.PressResult.EDITED):
        return verdict.text() + "."
    return _REPLIES.get(verdict.result)


class InteractionHandler:
    def __init__(self, ctx: ChannelContext, responder: Responder, signing_secret: str) -> None:
        self._ctx, self._out, self._secret = ctx, responder, signing_secret

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
        if isinstance(interaction, Press):
            return await self._press(interaction)
        if isinstance(interaction, Submission):
            return await self._submission(interaction)
        if isinstance(interaction, EditSubmission):  # the card, synced, shows the change
            return (await amend.submit_edit(self._ctx, interaction))[0]
        return web.Response(status=200)

    # ---------------------------------------------------------------- buttons
    async def _press(self, press: Press) -> web.Response:
        if press.verb == "reason":
            reply = await self._open_reason(press)
        elif press.verb in ("edit", "extend"):
            verdict = await (
                amend.open_edit(self._ctx, self._out, press) if press.verb == "edit" else amend.extend(self._ctx, press)
            )
            reply = reply_text(verdict) if verdict is not None else None
        else:
            outcome = Outcome.APPROVE if press.verb == "approve" else Outcome.REJECT
            reply = await self._decide(press.approval_id, outcome, press.user_id, press.channel_id)
        if reply:  # the commit is done: the reply is slow work, after the ack
            self._out.spawn(self._out.respond(press.response_url, reply))
        return web.Response(status=200)

    async def _open_reason(self, press: Press) -> str | None:
        """Check that the presser may decide now, then open the modal after the ack."""
        verdict = await self._ctx.inbound.may_ask_reason(
            presses.Press(press.approval_id, Outcome.REJECT, f"slack:{press.user_id}", _where(press.channel_id))
        )
        if verdict.result is not presses.PressResult.ASK or verdict.approval is None:
            return reply_text(verdict)
        view = render.reason_modal(verdict.approval, make_ref(self._ctx.signer, press.approval_id), press.channel_id)
        self._out.spawn(self._out.open_modal(press.trigger_id, view, press.response_url))
        return None

    # ---------------------------------------------------------------- the modal
    async def _submission(self, sub: Submission) -> web.Response:
        if not sub.comment:
            return _modal_error("Please write a reason.")
        reply = await self._decide(sub.approval_id, Outcome.REJECT, sub.user_id, sub.channel_id, sub.comment)
        if reply:
            return _modal_error(reply)
        return web.Response(status=200)  # an empty 200 closes the modal

    # ---------------------------------------------------------------- the decision
    async def _decide(
        self,
        approval_id: str,
        outcome: Outcome,
        user_id: str,
        channel_id: str,
        comment: str | None = None,
    ) -> str | None:
        """Commit the vote; return what to tell the presser, or None when the card says it all."""
        press = presses.Press(approval_id, outcome, f"slack:{user_id}", _where(channel_id), comment=comment)
        return reply_text(await self._ctx.inbound.press(press))


def _where(channel_id: str) -> str:
    return f"slack:{channel_id}" if channel_id else "slack"


class InvalidSignature(Unauthorized):
    """The request is not signed by Slack, or the signature is stale."""

    code = "invalid_signature"


def _modal_error(text: str) -> web.Response:
    return web.json_response({"response_action": "errors", "errors": {render.REASON_BLOCK: text[:150]}})
