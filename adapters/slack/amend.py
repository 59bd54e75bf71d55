"""The Slack side of approve-with-changes and extend: the Edit & approve modal's press and
submission, and the '+1h' buttons. The interaction handler (webhook.py) dispatches here; each
function returns what the handler sends (an ephemeral reply, or the modal's answer).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from adapters.slack import edit
from adapters.slack.parse import EditSubmission, SlackPress, make_ref
from gateway.core import rounds
from gateway.core.durations import parse_duration
from gateway.core.errors import GatewayError
from gateway.core.models import Outcome
from gateway.plugin import ChannelContext, Press, PressOutcome, PressResult

if TYPE_CHECKING:
    from adapters.slack.webhook import Responder


def _press(p: SlackPress, outcome: Outcome = Outcome.APPROVE) -> Press:
    where = f"slack:{p.channel_id}" if p.channel_id else "slack"
    return Press(p.approval_id, outcome, f"slack:{p.user_id}", where)


async def open_edit(ctx: ChannelContext, out: Responder, p: SlackPress) -> PressOutcome | None:
    """Check that the presser may edit now, then open the modal after the ack (None), or the
    verdict saying why not."""
    verdict = await ctx.inbound.may_edit(_press(p))
    if verdict.result is not PressResult.ASK or verdict.approval is None:
        return verdict
    seen = rounds.tag(ctx.signer, verdict.approval)
    view = edit.modal(verdict.approval, make_ref(ctx.signer, p.approval_id), p.channel_id, seen)
    out.spawn(out.open_modal(p.trigger_id, view, p.response_url))
    return None


async def extend(ctx: ChannelContext, p: SlackPress, marks: tuple[str, ...] = ()) -> PressOutcome:
    """'+1h'; `marks`: the delivery's de-duplication keys, committed with the extension."""
    try:
        duration = parse_duration(p.arg)
    except ValueError:  # refused before it became a press: its marks on their own
        refused = PressOutcome(PressResult.INVALID, error=f"not a duration: {p.arg!r}")
        return refused if await ctx.inbound.refused(marks) else replace(refused, redelivered=True)
    return await ctx.inbound.extend(replace(_press(p), marks=marks), duration)


async def submit_edit(
    ctx: ChannelContext, sub: EditSubmission, marks: tuple[str, ...] = ()
) -> tuple[dict[str, Any] | None, PressOutcome | None]:
    """The modal's ack: `response_action: errors` on the field's block when the edit is refused
    (nothing changes), else None (an empty ack closes it), with the verdict. `marks`: the
    delivery's de-duplication keys, committed with the vote."""
    approval = await ctx.inbound.approval(sub.approval_id)
    if approval is None:
        return _errors({"": "This approval no longer exists."}), None
    try:
        args = edit.read(approval, sub.values)
    except GatewayError as exc:
        return _errors(edit.errors(exc.details.get("field"), exc.message, approval)), None
    where = f"slack:{sub.channel_id}" if sub.channel_id else "slack"
    verdict = await ctx.inbound.press(
        Press(approval.id, Outcome.APPROVE, f"slack:{sub.user_id}", where, args=args, seen=sub.seen, marks=marks)
    )
    if verdict.result is PressResult.INVALID:
        field = (verdict.error or "").split(":", 1)[0]
        return _errors(edit.errors(field if field.startswith("args") else None, verdict.error or "", approval)), None
    if verdict.refused:
        return _errors(edit.errors(None, verdict.text(), approval)), None
    return None, verdict


def _errors(errors: dict[str, str]) -> dict[str, Any]:
    return {"response_action": "errors", "errors": errors}


__all__ = ["extend", "open_edit", "submit_edit"]
