"""`POST /webhooks/teams`: the Bot Framework's activities, answered in the HTTP response.

In order, before anything is read from or written to the gateway:
1. the body is a JSON object (400 otherwise);
2. its bearer token is the Bot Framework's, for this bot and this activity (`auth.py`): 401;
3. the activity is one of our `adaptiveCard/action` invokes with an authentic reference
   (`parse.py`); anything else is acknowledged and ignored;
4. its id was not seen before: a replayed activity changes nothing. A decision (or an extension)
   records the id with itself, in its transaction (an activity cut short before that commit left
   nothing, and its redelivery decides like the first); anything else records it first
   (`Inbound.first_time`);
5. its tenant is one of `teams.tenant_ids`: a press from another tenant is denied like a
   stranger's (on the record, bounded per person and approval).
Then a press goes through `Inbound.press` (the one authorization, the one commit), and the answer
is the presser's own view of the card as committed; the outbox PUTs the shared card for everyone.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from aiohttp import web

from adapters.teams import render
from adapters.teams.auth import Expected, Keys, TokenRefused, verify
from adapters.teams.parse import BadActivity, Execute, load, read
from adapters.teams.spec import TeamsSettings
from gateway.core.durations import parse_duration
from gateway.core.errors import GatewayError, InvalidToken, ValidationError
from gateway.core.models import Approval, Outcome
from gateway.plugin import ChannelContext, Press, PressOutcome, PressResult, argsform, error_response

if TYPE_CHECKING:
    from adapters.teams.channel import TeamsChannel

log = logging.getLogger("adapters.teams")
PATH = "/webhooks/teams"
NOT_AUTHORISED = "You are not authorised to decide this approval; nothing changed."
REPLAYED = "This action was already received; nothing changed."
# the verbs that decide or extend: their mark commits with what they write
_COMMITS_MARKS = frozenset({"approve", "reject", "grant", "edit", "extend"})
_CARD_RESULTS = frozenset(
    {
        PressResult.APPROVED,
        PressResult.REJECTED,
        PressResult.VOTE,
        PressResult.EDITED,
        PressResult.ALREADY_DECIDED,
        PressResult.STALE,
        PressResult.DUPLICATE_VOTE,
    }
)


class ActivityHandler:
    def __init__(self, ctx: ChannelContext, channel: TeamsChannel, keys: Keys) -> None:
        self._ctx, self._channel, self._keys = ctx, channel, keys
        settings: TeamsSettings = ctx.settings
        self._settings = settings
        self._tenants = frozenset(t.lower() for t in settings.tenant_ids)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            activity = load(await request.read())
        except BadActivity as exc:
            return error_response(ValidationError("activity", str(exc)))
        expected = Expected(self._settings.issuer, self._settings.app_id, self._ctx.clock.now())
        try:
            await verify(request.headers.get("Authorization"), activity, self._keys, expected)
        except TokenRefused as exc:
            log.warning("teams: activity refused: %s", exc)
            return error_response(InvalidToken(str(exc)))
        try:
            parsed = read(activity, self._ctx.signer)
        except BadActivity as exc:
            log.warning("teams: unreadable activity: %s", exc)
            return web.json_response(render.error_response(400, "BadRequest", str(exc)))
        if not isinstance(parsed, Execute):
            return web.Response(status=200)
        return web.json_response(await self.execute(parsed))

    async def execute(self, e: Execute) -> dict[str, Any]:
        """The invoke's answer, once whatever it decided is committed."""
        marks = await self._marks(e)
        if marks is None:
            return _replayed(e)
        actor = _actor(e)
        if e.tenant not in self._tenants:
            why = f"tenant {e.tenant or '(none)'} is not in teams.tenant_ids"
            if e.verb != "refresh":
                denied = await self._ctx.inbound.press(self._press(e, Outcome.REJECT, outsider=why, marks=marks))
                if denied.redelivered:
                    return _replayed(e)
            log.warning("teams: a press refused: %s", why)
            return render.message_response(NOT_AUTHORISED)
        if e.mri:
            self._channel.members.learn(e.conversation, e.user, e.mri)
        if e.verb == "refresh":
            approval = await self._ctx.inbound.approval(e.approval_id)
            if approval is None:
                return render.message_response("This approval no longer exists.")
            return render.card_response(await self._view(approval, actor, e))
        if e.verb == "edit":
            return await self._edit(e, marks)
        if e.verb == "extend":
            return await self._extend(e, marks)
        if e.verb == "grant":  # "Approve · 1h": the policy checks the offer, as the API's
            press = self._press(e, Outcome.APPROVE, seen=e.seen, grant=e.arg or None, marks=marks)
            return await self._answer(await self._ctx.inbound.press(press), actor, e)
        outcome = Outcome.APPROVE if e.verb == "approve" else Outcome.REJECT
        comment = (e.reason or None) if outcome is Outcome.REJECT else None
        seen = e.seen if outcome is Outcome.APPROVE else None
        verdict = await self._ctx.inbound.press(self._press(e, outcome, comment=comment, seen=seen, marks=marks))
        return await self._answer(verdict, actor, e)

    async def _marks(self, e: Execute) -> tuple[str, ...] | None:
        """The marks a decision or an extension commits with itself (so that an activity that
        died before that commit counts on its redelivery, and never twice); () once recorded
        here, for an activity that writes nothing (a refresh); None: a replay."""
        if not e.activity_id:
            return None
        marks = (f"teams:activity:{e.activity_id}",)
        if e.verb in _COMMITS_MARKS:
            return marks
        return () if await self._ctx.inbound.first_time(*marks) else None

    async def _edit(self, e: Execute, marks: tuple[str, ...]) -> dict[str, Any]:
        approval = await self._ctx.inbound.approval(e.approval_id)
        if approval is None:
            return await self._unpressed(e, marks, "This approval no longer exists.")
        try:
            args = argsform.read(approval, e.inputs)
        except GatewayError as exc:
            return await self._unpressed(e, marks, exc.message.rstrip(".") + "; nothing changed.")
        press = self._press(e, Outcome.APPROVE, args=args, seen=e.seen, marks=marks)
        return await self._answer(await self._ctx.inbound.press(press), _actor(e), e)

    async def _unpressed(self, e: Execute, marks: tuple[str, ...], text: str) -> dict[str, Any]:
        """An edit or an extend refused before it became a press (nothing else recorded): its
        mark on its own, so that a replay of it is answered as a replay, like any other."""
        if not await self._ctx.inbound.refused(marks):
            return _replayed(e)
        return render.message_response(text)

    async def _extend(self, e: Execute, marks: tuple[str, ...]) -> dict[str, Any]:
        try:
            duration = parse_duration(e.arg)
        except ValueError:  # refused before it became a press: its mark on its own
            return await self._unpressed(e, marks, f"Not a duration: {e.arg[:20]!r}; nothing changed.")
        verdict = await self._ctx.inbound.extend(self._press(e, Outcome.APPROVE, marks=marks), duration)
        if verdict.result is not PressResult.EXTENDED or verdict.approval is None:
            return await self._answer(verdict, _actor(e), e)
        return render.card_response(await self._view(verdict.approval, _actor(e), e, notice=verdict.text()))

    def _press(self, e: Execute, outcome: Outcome, **more: Any) -> Press:
        where = f"teams:{e.conversation}" if e.conversation else "teams"
        card_ref = f"{e.conversation}|{e.card_id}" if e.conversation and e.card_id else None
        return Press(e.approval_id, outcome, _actor(e), where, card_ref=card_ref, name=e.name or None, **more)

    async def _answer(self, verdict: PressOutcome, actor: str, e: Execute) -> dict[str, Any]:
        if verdict.redelivered:  # its mark was recorded before: answered the first time
            return _replayed(e)
        if verdict.result is PressResult.DENIED:
            return render.message_response(NOT_AUTHORISED)
        if verdict.result not in _CARD_RESULTS or verdict.approval is None:
            return render.message_response(verdict.text().rstrip(".") + "; nothing changed.")
        return render.card_response(await self._view(verdict.approval, actor, e, notice=verdict.text()))

    async def _view(self, approval: Approval, actor: str, e: Execute, notice: str | None = None) -> dict[str, Any]:
        view = await self._channel.view(approval, e.conversation, for_actor=actor, notice=notice)
        return render.fitted(approval, view, actor)


def _replayed(e: Execute) -> dict[str, Any]:
    log.warning("teams: activity %r replayed: ignored", e.activity_id[:80])
    return render.message_response(REPLAYED)


def _actor(e: Execute) -> str:
    """The presser's identity: their Entra object id (canonical: lower case)."""
    return f"teams:{e.user.lower()}"


__all__ = ["PATH", "ActivityHandler"]
