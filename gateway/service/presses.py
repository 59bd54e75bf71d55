"""The inbound use cases every channel shares: a press, asking for a reason, attaching a reason,
de-duplicating an inbound delivery, and what a delivery learned about its card (it was refused as
too big, its chat moved).

An adapter turns a platform payload into a `Press` or a `Reply`, calls one of these, and renders
the `PressOutcome` as the platform's answer. It never reaches the store: the verdict is computed from
what was committed, so the presser is told the truth (the answer is sent after the commit).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from enum import StrEnum
from typing import Any

from gateway.core import rounds
from gateway.core.channels import Channel, DeliveryError, OutgoingCard, parse_address
from gateway.core.clock import Clock
from gateway.core.delegation import Delegation
from gateway.core.errors import (
    AlreadyDecided,
    Conflict,
    Forbidden,
    NotAnApprover,
    RequesterCannotDecide,
    StaleRound,
    ValidationError,
)
from gateway.core.events import EventKind
from gateway.core.identity import shown
from gateway.core.models import Approval, Card, NewEvent, NewOutbox, OutboxKind, Outcome, Status
from gateway.core.tokens import TokenSigner
from gateway.service import editlinks
from gateway.service.commands import AddComment, Authority, CastVote, Extend
from gateway.service.decisions import Decisions
from gateway.store import Prompt, SeenBefore, Store, ViewOf

log = logging.getLogger("gateway.presses")
ALREADY_RECEIVED = "This press was already received; nothing changed"
REASON_WINDOW = timedelta(minutes=10)  # how long a "why reject?" question waits for its reply
REASON_PURPOSE = "reject_reason"  # the reason for a reject already recorded
REJECT_PURPOSE = "reject_with_reason"  # `require_reason`: the reply is the reject (asked before it)


class PressResult(StrEnum):
    APPROVED = "approved"  # this press approved it (quorum met)
    REJECTED = "rejected"  # this press rejected it
    VOTE = "vote"  # recorded, more approvals needed
    DUPLICATE_VOTE = "duplicate_vote"  # this person had already approved
    ALREADY_DECIDED = "already_decided"  # decided before (or by a press that won the race)
    DENIED = "denied"  # the presser may not decide
    UNKNOWN = "unknown"  # no such approval
    BUSY = "busy"  # too much contention: press again
    ASK = "ask"  # `may_ask_reason` / `may_edit`: go ahead and ask
    EDITED = "edited"  # this press changed the args: a new round of votes on them began
    EXTENDED = "extended"  # this press extended the deadline
    INVALID = "invalid"  # refused, nothing changed: `PressOutcome.error` says why (a bad edit, a missing reason)
    STALE = "stale"  # an approve drawn for args another approver changed since: refused, the card re-synced


_RESULT = {
    EventKind.APPROVED: PressResult.APPROVED,
    EventKind.REJECTED: PressResult.REJECTED,
    EventKind.VOTE: PressResult.VOTE,
    EventKind.DUPLICATE_VOTE: PressResult.DUPLICATE_VOTE,
    EventKind.EDITED: PressResult.EDITED,
}
_TEXT = {
    PressResult.APPROVED: "Approved",
    PressResult.REJECTED: "Rejected",
    PressResult.DUPLICATE_VOTE: "You already approved; waiting for more approvals",
    PressResult.DENIED: "Not authorised",
    PressResult.UNKNOWN: "This approval no longer exists",
    PressResult.BUSY: "Too many people pressed at once; please press again",
    PressResult.ASK: "Why do you reject?",
    PressResult.EDITED: "Your changes are recorded; the approvers vote again on them",
    PressResult.STALE: "The arguments changed: look at the updated card",
}


@dataclass(frozen=True, slots=True)
class Press:
    """A button press (or a confirmed link) on a channel.

    `actor` is the presser's canonical identity and `channel` the address it came from ('<kind>'
    alone when the platform does not say). `card_ref` is the reference of the card pressed when
    the platform proves it (a callback comes only from the bot's own message): a card whose post
    had no recorded answer is adopted, and a second copy is closed once the approval is decided.
    `name` is how the platform shows the presser. A `redelivered` press (seen before) finishes
    what its first delivery may have left undone, and records nothing twice. `marks`: the
    delivery's de-duplication keys ('<kind>:update:<id>'), when the channel leaves them to the
    press: recorded with what the press commits (its decision or extension, in that write's own
    transaction), so that a crash before that commit leaves the delivery unseen and its
    redelivery decides like the first; one whose marks were recorded before is redelivered
    (`PressOutcome.redelivered`)."""

    approval_id: str
    outcome: Outcome
    actor: str
    channel: str
    card_ref: str | None = None
    name: str | None = None
    comment: str | None = None
    redelivered: bool = False
    args: dict[str, Any] | None = None  # approve with changes: the edited args
    # The round tag the button, link or form was drawn with (gateway.core.rounds.tag); None: one
    # drawn before tags existed, taken as drawn for the original args. Only an approve checks it.
    seen: str | None = None
    # Why the channel itself refuses this presser whoever they are (e.g. a workspace or tenant that
    # is not pinned): denied like a stranger, on the record within the same bound.
    outsider: str | None = None
    grant: str | None = None  # "Approve · 1h": a standing grant with the approve (gateway.service.grants)
    marks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Reply:
    """A message answering a question the gateway asked (`key` names where it was asked)."""

    key: str
    actor: str
    text: str
    channel: str


@dataclass(frozen=True, slots=True)
class PressOutcome:
    """What a press did, from the committed state: `approval` is the approval after it."""

    result: PressResult
    approval: Approval | None = None
    error: str | None = None  # INVALID: why, naming the field ('args.amount: ...')
    # a redelivery (its marks were recorded before, or the press said so): answered the first time
    redelivered: bool = False

    @property
    def decided_by(self) -> str | None:
        """Who decided, as people should read it (the person's name where `[people]` has one)."""
        d = self.approval.decision if self.approval else None
        return d.shown_as if d else None

    @property
    def refused(self) -> bool:
        """Nothing was recorded for the presser (a platform may show this as an alert)."""
        return self.result in _REFUSED

    def text(self) -> str:
        """The answer in plain English (adapters escape it, or word it their way)."""
        if self.result is PressResult.VOTE and self.approval is not None:
            return f"Vote recorded: {self.approval.approvals_count} of {self.approval.policy.quorum} approvals"
        if self.result is PressResult.ALREADY_DECIDED and self.approval is not None:
            return already_text(self.approval)
        if self.result is PressResult.INVALID and self.error:
            return self.error
        if self.result is PressResult.EXTENDED and self.approval is not None and self.approval.deadline:
            return f"Extended: the new deadline is {self.approval.deadline.strftime('%Y-%m-%d %H:%M UTC')}"
        return _TEXT.get(self.result, self.result.value)


_REFUSED = frozenset(
    {
        PressResult.DENIED,
        PressResult.ALREADY_DECIDED,
        PressResult.UNKNOWN,
        PressResult.BUSY,
        PressResult.INVALID,
        PressResult.STALE,
    }
)


def already_text(approval: Approval) -> str:
    """'Already approved by NAME', 'Already timed out (reject by policy)'."""
    d = approval.decision
    if d is None:
        return f"Already {approval.status.verb}"
    if approval.status is Status.TIMED_OUT:
        return f"Already timed out ({d.outcome.value} by policy)"
    return f"Already {approval.status.verb} by {d.shown_as}"


class Inbound:
    """The use cases a channel calls (`ChannelContext.inbound`). A press becomes a `CastVote`
    (or an `Extend`) for `Decisions`, authorized once against the approval it read."""

    def __init__(
        self,
        decisions: Decisions,
        store: Store,
        clock: Clock,
        signer: TokenSigner,
        *,
        public_url: str,
        channels: Mapping[str, Channel],
        wake_outbox: Callable[[], None],
    ) -> None:
        self._decisions, self._store, self._clock, self._signer = decisions, store, clock, signer
        self._identities = decisions.identities
        self._public_url = public_url
        self._channels = channels  # filled by the runtime once the channels are built
        self._wake_outbox = wake_outbox

    async def first_time(self, key: str, *more: str) -> bool:
        """True the first time an inbound delivery `key` is seen (e.g. '<kind>:update:<id>');
        False for a redelivery. Kept 48 hours. Several keys of one delivery are recorded in
        one transaction: True if none was seen."""
        if more:
            return await self._store.remember_delivery((key, *more), self._clock.now())
        return await self._store.remember_inbound(key, self._clock.now())

    async def refused(self, marks: tuple[str, ...]) -> bool:
        """Record the marks of a delivery refused before it became a press (a form that does not
        pass), as a refused one: a replay of it decides nothing later (`_refused_before`). True
        the first time."""
        return not marks or await self._store.remember_delivery((*marks, _refusal(marks)), self._clock.now())

    async def approval(self, approval_id: str) -> Approval | None:
        """The approval as it is now (e.g. to show it on a confirmation page)."""
        return await self._store.get_approval(approval_id)

    async def press(self, p: Press) -> PressOutcome:
        # the approval and the card pressed, in one snapshot (one transaction, not one per read)
        (view,) = await self._store.approval_views([ViewOf(p.approval_id, None if p.card_ref is None else p.channel)])
        approval = view.approval
        if approval is None:
            return await self._marked(p, PressOutcome(PressResult.UNKNOWN))
        actor, denied, via = await self._check(approval, p)
        if denied is not None:  # a stranger's press adopts, closes or edits no card: only `denied`, bounded
            return denied
        recorded = await self._adopt(approval, view.card, p)
        verdict = await self._vote(approval, actor, p, via)
        if verdict.approval is not None and verdict.approval.status.final:
            await self._close_copy(verdict.approval, p, recorded)
        return verdict

    async def may_ask_reason(self, p: Press) -> PressOutcome:
        """Whether the presser may be asked why they reject (before a form opens): ASK, or why not."""
        approval = await self._store.get_approval(p.approval_id)
        if approval is None:
            return PressOutcome(PressResult.UNKNOWN)
        _, denied, _ = await self._check(approval, p)
        if denied is not None:
            return denied
        if approval.status.final:
            return PressOutcome(PressResult.ALREADY_DECIDED, approval)
        return PressOutcome(PressResult.ASK, approval)

    async def check(
        self, approval: Approval, outcome: Outcome, actor: str, *, args: dict[str, Any] | None, comment: str | None
    ) -> None:
        """What a press with these edited args and comment would be refused for (a ValidationError
        naming the field), without committing anything: for a one-time link that must not be
        used up by a typo."""
        await self._decisions.check_vote(approval, outcome, actor, args=args, comment=comment)

    async def may_edit(self, p: Press) -> PressOutcome:
        """Whether the presser may edit the args (before a form or a link opens): ASK, or why not."""
        verdict = await self.may_ask_reason(p)
        if verdict.result is PressResult.ASK and verdict.approval is not None and not verdict.approval.editable:
            return PressOutcome(PressResult.INVALID, verdict.approval, error="This approval does not allow edits")
        return verdict

    async def edit_link(self, p: Press) -> tuple[PressOutcome, str | None]:
        """A one-time link to the edit form for the presser (gateway.service.editlinks), once
        they may edit: (ASK, url), or the verdict saying why not (and no link)."""
        verdict = await self.may_edit(p)
        if verdict.result is not PressResult.ASK:
            return verdict, None
        actor = self._identities.canonical(p.actor, "actor")
        link = editlinks.token(self._signer, p.approval_id, actor, p.name, self._clock.now())
        return verdict, editlinks.url(self._public_url, link)

    async def extend(self, p: Press, duration: timedelta) -> PressOutcome:
        """An approver's '+1h' press: the deadline moves as the policy allows (INVALID beyond it).
        The press's `marks` commit with the extension, as a vote's: a delivery that died before
        that commit left nothing behind, and its redelivery extends like the first; a redelivery
        of one that was committed (or refused) extends nothing and is `redelivered`."""
        approval = await self._store.get_approval(p.approval_id)
        if approval is None:
            return await self._marked(p, PressOutcome(PressResult.UNKNOWN))
        actor, denied, _ = await self._check(approval, p)
        if denied is not None:
            return denied
        if p.redelivered:  # an extension is no vote to recognise: never a second one
            return _received(approval)
        try:
            cmd = Extend(approval.id, duration, actor, channel=p.channel, marks=p.marks)
            after = await self._decisions.extend(cmd, current=approval)
        except SeenBefore:  # its first delivery committed (or was refused): nothing written now
            return _received(await self._store.get_approval(approval.id) or approval)
        except AlreadyDecided:
            return await self._marked(
                p, PressOutcome(PressResult.ALREADY_DECIDED, await self._store.get_approval(approval.id))
            )
        except Forbidden as exc:  # PolicyNotAllowed: beyond what the policy allows
            return await self._marked(p, PressOutcome(PressResult.INVALID, approval, error=exc.message))
        except Conflict:
            return _busy(p, approval)
        return PressOutcome(PressResult.EXTENDED, after)

    async def expect_reason(self, key: str, approval_id: str, actor: str, *, purpose: str = REASON_PURPOSE) -> None:
        """The gateway asked `actor` why they rejected, at `key`: their reply there, within
        REASON_WINDOW, becomes the decision's comment (`attach_reason`); with REJECT_PURPOSE
        (a policy that requires a reason) the reply is the reject itself."""
        now = self._clock.now()
        actor = self._identities.canonical(actor, "actor")
        await self._store.save_prompt(Prompt(key, approval_id, actor, purpose, now, now + REASON_WINDOW))

    async def attach_reason(self, r: Reply) -> bool:
        """A reply to a question asked with `expect_reason`, by the person asked and in time:
        the reason goes on the decision and every card is synced. False if it answers nothing."""
        try:
            actor = self._identities.canonical(r.actor, "actor")
        except ValidationError:
            return False
        prompt = await self._store.take_prompt(r.key, actor, self._clock.now())
        if prompt is None:
            return False
        if prompt.purpose == REJECT_PURPOSE:
            verdict = await self.press(Press(prompt.approval_id, Outcome.REJECT, actor, r.channel, comment=r.text))
            return verdict.result is PressResult.REJECTED
        try:
            await self._decisions.comment(AddComment(prompt.approval_id, actor, r.text, r.channel))
        except Forbidden as exc:
            log.warning("reason not attached: %s", exc.message)
            return False
        return True

    # ---------------------------------------------------------------- what a delivery learned
    async def card_degraded(self, approval_id: str, channel: str, error: str) -> None:
        """The platform refused the full card on `channel` (too big): on the record before the
        channel sends a compact one, whose own outcome the outbox records as usual."""
        now = self._clock.now()
        data = {"error": error[:500]}
        await self._store.append_events(
            [NewEvent(approval_id, EventKind.CARD_DEGRADED, now, channel=channel, data=data)]
        )

    async def card_moved(self, approval_id: str, channel: str, old_ref: str, new_ref: str) -> bool:
        """The card's chat moved (the platform said so on a call): record its new ref durably, so
        that every later sync and reminder goes there. False if the card's ref is not `old_ref`."""
        now = self._clock.now()
        moved = NewEvent(
            approval_id, EventKind.CARD_MOVED, now, channel=channel, data={"from": old_ref, "ref": new_ref}
        )
        return await self._store.move_card(approval_id, channel, old_ref, new_ref, now, [moved])

    # ---------------------------------------------------------------- the steps of a press
    async def _check(self, approval: Approval, p: Press) -> tuple[str, PressOutcome | None, Delegation | None]:
        """The presser's canonical identity, a DENIED verdict if they may not decide (on the
        record as `denied`, at most DENIED_KEPT times per person; a redelivery is not recorded),
        and the delegation they decide through, if any."""
        try:
            actor = self._identities.canonical(p.actor, "actor")
        except ValidationError:  # not an id of its kind: nobody may decide as it (and no record of it)
            log.warning("a press refused: %s is not a canonical identity", shown(p.actor))
            return p.actor, await self._marked(p, PressOutcome(PressResult.DENIED, approval)), None
        try:
            if p.outsider is not None:
                raise NotAnApprover(f"{actor} may not decide here: {p.outsider}")
            # a delegate decides what their delegator may (gateway.core.delegation)
            via = await self._decisions.authorize(Authority.APPROVER, actor, approval)
        except (NotAnApprover, RequesterCannotDecide) as exc:
            denied = await self._marked(p, PressOutcome(PressResult.DENIED, approval))
            if not denied.redelivered:  # the marks first, as ever: once per delivery at most
                await self._decisions.record_denied(approval.id, actor, p.channel, exc.message)
            return actor, denied, None
        return actor, None, via

    async def _marked(self, p: Press, verdict: PressOutcome) -> PressOutcome:
        """A verdict that commits no decision: the press's marks recorded on their own (one
        transaction for all), and the verdict `redelivered` if they were seen before."""
        if p.redelivered or not await self.refused(p.marks):
            return replace(verdict, redelivered=True)
        return verdict

    async def _refused_before(self, p: Press) -> bool:
        """Whether the marks `p` met were recorded by a refusal (`refused`): that delivery decided
        nothing, and a copy of it decides nothing either, even one that would pass now (a
        delegation made since): its presser was told that nothing changed, and a platform's
        signed request may be replayed by whoever captured it. Marks recorded without that (by
        an older version, before its decision and a crash) let the copy decide. A check that
        writes: when absent, the refusal mark is recorded, harmless (this copy decides, or is
        refused now)."""
        return bool(p.marks) and not await self._store.remember_delivery((_refusal(p.marks),), self._clock.now())

    async def _vote(self, approval: Approval, actor: str, p: Press, via: Delegation | None) -> PressOutcome:
        if approval.status.final:
            return await self._marked(p, PressOutcome(PressResult.ALREADY_DECIDED, approval))
        if p.redelivered and any(v.approver == actor and v.outcome is p.outcome for v in approval.votes):
            return PressOutcome(PressResult.DUPLICATE_VOTE, approval, redelivered=True)  # its first delivery committed
        if p.redelivered and await self._refused_before(p):
            return PressOutcome(PressResult.INVALID, approval, error=ALREADY_RECEIVED, redelivered=True)
        try:
            cmd = CastVote(
                approval.id,
                p.outcome,
                actor,
                channel=p.channel,
                comment=p.comment,
                name=p.name,
                args=p.args,
                seen=p.seen or rounds.ORIGINAL,
                grant=p.grant,
                marks=() if p.redelivered else p.marks,  # committed with the vote
            )
            done = await self._decisions.cast(cmd, current=approval, current_via=via)  # authorized by `_check`
        except SeenBefore:
            # its marks were recorded before (another delivery of it committed, or one recorded
            # them without a decision): nothing was written; finish as a redelivery, which
            # decides what is still undone and records nothing twice
            now = await self._store.get_approval(approval.id) or approval
            again = replace(p, redelivered=True)  # its marks: only to tell a refused one (`_refused_before`)
            _, denied, via = await self._check(now, again)
            return denied or await self._vote(now, actor, again, via)
        except AlreadyDecided:  # lost the race: tell the truth about the winner
            winner = PressOutcome(PressResult.ALREADY_DECIDED, await self._store.get_approval(approval.id))
            return await self._marked(p, winner)
        except StaleRound:  # drawn for args that changed since: nothing recorded, redraw that card
            current = await self._store.get_approval(approval.id)
            await self._resync(current or approval, p)
            return await self._marked(p, PressOutcome(PressResult.STALE, current or approval))
        except ValidationError as exc:  # a bad edit, or a reject without the reason the policy requires
            return await self._marked(p, PressOutcome(PressResult.INVALID, approval, error=exc.message))
        except Conflict:
            return _busy(p, approval)
        result = (
            PressResult.ALREADY_DECIDED if done.event is None else _RESULT.get(done.event, PressResult.ALREADY_DECIDED)
        )
        return PressOutcome(result, done.approval, redelivered=p.redelivered)

    async def _resync(self, approval: Approval, p: Press) -> None:
        """Redraw the card a stale approve came from, so that it shows the current args with a
        current approve (the edit synced it already, unless that sync is still on its way or the
        card cannot change: `{"stale": True}` tells a channel whose sent cards are immutable, a
        mail, to send a fresh one)."""
        if p.channel not in approval.channels or approval.status.final:
            return
        now = self._clock.now()
        await self._store.enqueue_outbox([NewOutbox(approval.id, p.channel, OutboxKind.SYNC, {"stale": True})], now)
        self._wake_outbox()

    async def _adopt(self, approval: Approval, card: Card | None, p: Press) -> str | None:
        """A press by someone who may decide proves where a card is. If its post had no recorded
        answer (`uncertain`, or a crash mid-call), record the card now and sync it, so that it
        shows the outcome like any other card. Returns the ref recorded for the press's channel,
        if any. `card`: that channel's card, read with the approval. A stranger's press never gets
        here: it could point at any message."""
        if p.card_ref is None or (p.channel not in approval.channels and p.channel not in approval.policy.escalate_to):
            return None
        store, now = self._store, self._clock.now()
        if card is not None and card.ref is not None:
            return card.ref
        adopted = NewEvent(approval.id, EventKind.CARD_ADOPTED, now, channel=p.channel, data={"ref": p.card_ref})
        if not await store.adopt_card(approval.id, p.channel, p.card_ref, now, [adopted]):
            card = await store.get_card(approval.id, p.channel)  # recorded meanwhile
            return None if card is None else card.ref
        log.debug("adopted the card of %s on %s, found by a press", approval.id, p.channel)
        await store.enqueue_outbox([NewOutbox(approval.id, p.channel, OutboxKind.SYNC)], now)
        self._wake_outbox()
        return p.card_ref

    async def _close_copy(self, approval: Approval, p: Press, recorded: str | None) -> None:
        """A press on a card that is not the recorded one: a second copy (a post whose outcome was
        unknown, then posted again). Once the approval is decided, render that copy decided too,
        so no live buttons remain; once per copy, not per press."""
        if p.card_ref is None or recorded is None or recorded == p.card_ref:
            return  # no card of this channel, or the recorded one: the outbox syncs it
        kind, target = parse_address(p.channel)
        channel = self._channels.get(kind)
        events = await self._store.list_events(approval.id)
        if channel is None or any(
            e.kind == EventKind.ORPHAN_CARD_SYNCED and e.channel == p.channel and e.data.get("ref") == p.card_ref
            for e in events
        ):
            return
        now = self._clock.now()
        try:
            await channel.update_card(OutgoingCard(p.channel, target, approval, now, p.card_ref))
        except DeliveryError as exc:
            log.warning("could not close a second card of %s on %s: %s", approval.id, p.channel, exc)
            return
        synced = NewEvent(approval.id, EventKind.ORPHAN_CARD_SYNCED, now, channel=p.channel, data={"ref": p.card_ref})
        await self._store.append_events([synced])


__all__ = [
    "REASON_PURPOSE",
    "REASON_WINDOW",
    "REJECT_PURPOSE",
    "Inbound",
    "Press",
    "PressOutcome",
    "PressResult",
    "Reply",
    "already_text",
]


def _received(approval: Approval) -> PressOutcome:
    """A redelivered press that changes nothing: what is true now, `redelivered`."""
    if approval.status.final:
        return PressOutcome(PressResult.ALREADY_DECIDED, approval, redelivered=True)
    return PressOutcome(PressResult.INVALID, approval, error=ALREADY_RECEIVED, redelivered=True)


def _busy(p: Press, approval: Approval) -> PressOutcome:
    """Lost to contention: nothing was committed, and its presser is told to press again. Its
    marks stay unrecorded, unlike a refusal's: the same delivery again (a one-time link confirmed
    again; a platform's redelivery) is that second press, and decides. Recorded, they would spend
    the link it asked to confirm again."""
    return PressOutcome(PressResult.BUSY, approval, redelivered=p.redelivered)


def _refusal(marks: tuple[str, ...]) -> str:
    """The mark that says a delivery (its first mark) was refused, recorded with its marks."""
    return f"{marks[0]}:refused"
