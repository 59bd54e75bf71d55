"""The decision use cases of `Service`: votes (with edited args), reasons, denied presses,
cancels and extensions. A mixin, so that `Service` stays one object for its callers while its
module stays readable; every method here reads, asks the pure rules (gateway.core.policy,
rounds, extend) what happens and commits through `Service._commit` (one CAS transaction).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from gateway.core import extend as extend_rules
from gateway.core import policy as rules
from gateway.core import rounds
from gateway.core.clock import Clock
from gateway.core.errors import Conflict, Forbidden, StaleRound, ValidationError
from gateway.core.events import EventKind
from gateway.core.identity import Identities
from gateway.core.models import Approval, NewEvent, NewOutbox, OutboxKind, Outcome, Vote
from gateway.core.principals import Principal
from gateway.core.redact import Redactor
from gateway.core.tokens import TokenSigner
from gateway.service import edits as service_edits
from gateway.store import Store

if TYPE_CHECKING:
    from gateway.service.approvals import Service

log = logging.getLogger("gateway.service")
CAS_RETRIES = 64
DENIED_KEPT = 5  # `denied` events kept per person and approval


class Decisions:
    """Mixed into `Service` (gateway.service.approvals), which provides what is declared here."""

    store: Store
    clock: Clock
    identities: Identities
    redactor: Redactor
    signer: TokenSigner

    if TYPE_CHECKING:

        async def get(self, approval_id: str, principal: Principal | None = None) -> Approval: ...

        def allowlist(self, actor: str) -> frozenset[str]: ...

        def check_may_decide(self, actor: str, approval: Approval) -> None: ...

        async def _commit(
            self,
            before: Approval,
            transition: rules.Transition,
            actor: str | None,
            channel: str | None,
            extra_outbox: Sequence[NewOutbox] = (),
            *,
            at: datetime | None = None,
        ) -> bool: ...

    @property
    def _service(self) -> Service:
        return cast("Service", self)

    async def decide(
        self,
        approval_id: str,
        outcome: Outcome,
        actor: str,
        *,
        comment: str | None = None,
        channel: str | None = None,
        trusted: bool = False,
        check_approver: bool = True,
        on_behalf_of: str | None = None,
        args: dict[str, Any] | None = None,
        seen: str | None = None,
        seen_field: str = "round",
    ) -> Approval:
        """A person's vote. `trusted` callers (operators) may decide where the approval names no
        approvers; chat users must be on the channel's allowlist. `actor` must be a canonical
        identity (a ValidationError naming `by` otherwise). `on_behalf_of` (an operator's note of
        whom it acted for) is recorded, never taken as the approver. The comment is redacted
        before it is stored or shown. `args`: the approver's edited args (approve with changes,
        gateway.service.edits), which start a new round when they differ from the current ones.
        `seen`: the round tag of what the voter saw (gateway.core.rounds.tag, or ORIGINAL); an
        approve on another round's args is refused (StaleRound, 409, naming `seen_field`), a
        reject never is (a veto whatever the args). None: not checked (an operator's API call
        that gave none)."""
        ballot = _Ballot(comment, channel, None, trusted, check_approver, on_behalf_of, args, seen, seen_field)
        return (await self._vote(approval_id, outcome, actor, ballot))[0]

    async def vote(
        self,
        approval_id: str,
        outcome: Outcome,
        actor: str,
        *,
        channel: str,
        comment: str | None,
        name: str | None,
        args: dict[str, Any] | None = None,
        seen: str | None = None,
    ) -> tuple[Approval, EventKind]:
        """A press: `decide` for someone on a channel's allowlist, returning also what the vote
        did (approved, rejected, vote, duplicate_vote), so that the presser is told what was
        committed. `name` is how the platform shows them, for cards; `seen` as in `decide`."""
        return await self._vote(approval_id, outcome, actor, _Ballot(comment, channel, name, args=args, seen=seen))

    async def check_vote(
        self, approval: Approval, outcome: Outcome, actor: str, *, args: dict[str, Any] | None, comment: str | None
    ) -> None:
        """The ValidationError a vote with these args and comment would get (nothing committed)."""
        service_edits.check_reason(approval, outcome, comment)
        if args is not None:
            if outcome is not Outcome.APPROVE:
                raise ValidationError("args", "only an approval carries edited args")
            await service_edits.propose(self._service, approval, args, actor, None)

    async def _vote(self, approval_id: str, outcome: Outcome, actor: str, b: _Ballot) -> tuple[Approval, EventKind]:
        if b.check_approver:
            actor = self.identities.canonical(actor, "by")
        person = self.identities.person(actor)
        comment = self.redactor.text(b.comment) if b.comment else b.comment
        on_behalf_of = b.on_behalf_of
        for _ in range(CAS_RETRIES):
            approval = await self.get(approval_id)
            if approval.status.final:
                raise rules.already_decided(approval)
            if b.check_approver:
                allowlist = (actor,) if b.trusted else self.allowlist(actor)
                rules.check_may_decide(actor, approval, allowlist, self.identities.party)
            if (
                b.seen is not None
                and outcome is Outcome.APPROVE
                and not rounds.saw_current(self.signer, approval, b.seen)
            ):
                raise StaleRound(
                    b.seen_field,
                    f"the arguments changed since this was drawn (round {rounds.round_number(approval)} votes on"
                    " other args): look at the updated card; nothing was recorded",
                )
            await self.check_vote(approval, outcome, actor, args=None, comment=comment)
            proposal, sealed = None, None
            if b.args is not None:
                if outcome is not Outcome.APPROVE:
                    raise ValidationError("args", "only an approval carries edited args")
                proposal, sealed = await service_edits.propose(self._service, approval, b.args, actor, person or b.name)
            vote = Vote(
                actor,
                outcome,
                self.clock.now(),
                comment,
                b.channel,
                on_behalf_of=on_behalf_of,
                person=person,
                name=b.name,
            )
            transition = rounds.vote_on(approval, vote, proposal)
            if sealed is not None:
                transition = replace(transition, approval=transition.approval.evolve(sealed=sealed))
            if on_behalf_of:
                transition = replace(transition, data={**transition.data, "on_behalf_of": on_behalf_of})
            if transition.approval is approval:  # the same person approving twice counts once
                await self.store.append_events(
                    [NewEvent(approval.id, transition.event, vote.at, actor, b.channel, dict(transition.data))]
                )
                return approval, transition.event
            if await self._commit(approval, transition, actor, b.channel):
                return transition.approval, transition.event
        raise Conflict("too much contention on this approval, retry")

    async def record_denied(self, approval_id: str, actor: str, channel: str | None, reason: str) -> bool:
        """A press from someone who may not decide: nothing changes, but it is on the record, at
        most DENIED_KEPT times per person and approval, whether it waits or is decided (the events
        table is append-only: a stranger pressing in a loop must not grow it). Concurrent presses
        take numbered slots through the inbound marks (an atomic insert-once on every backend), so
        the bound holds across replicas too. True if recorded."""
        party = self.identities.party(actor)
        events = await self.store.list_events(approval_id)
        kept = sum(1 for e in events if e.kind == EventKind.DENIED and self.identities.party(e.actor or "") == party)
        now = self.clock.now()
        for slot in range(kept + 1, DENIED_KEPT + 1):
            if await self.store.remember_inbound(f"denied:{approval_id}:{party}:{slot}", now):
                log.warning("approval %s: denied %s on %s: %s", approval_id, actor, channel, reason)
                data = {"reason": reason, **({"person": party} if party != actor else {})}
                await self.store.append_events([NewEvent(approval_id, EventKind.DENIED, now, actor, channel, data)])
                return True
        log.debug("approval %s: denied %s again (not recorded: %d already)", approval_id, actor, DENIED_KEPT)
        return False

    async def attach_comment(self, approval_id: str, actor: str, comment: str, channel: str | None = None) -> Approval:
        """The person who decided explains it afterwards (e.g. the reason asked for after a
        Reject press): the comment (redacted) goes on the decision and every card is synced."""
        actor = self.identities.canonical(actor, "by")
        comment = self.redactor.text(comment)
        for _ in range(CAS_RETRIES):
            approval = await self.get(approval_id)
            decision = approval.decision
            if decision is None or decision.decided_by != actor:
                raise Forbidden(f"{actor} did not decide this approval")
            after = approval.evolve(decision=replace(decision, comment=comment), version=approval.version + 1)
            transition = rules.Transition(after, EventKind.COMMENT_ADDED, False, {"by": actor, "comment": comment})
            syncs = [NewOutbox(approval.id, c, OutboxKind.SYNC) for c in approval.channels]
            if await self._commit(approval, transition, actor, channel, syncs):
                return after
        raise Conflict("too much contention on this approval, retry")

    async def cancel(
        self, approval_id: str, by: str, reason: str | None = None, *, on_behalf_of: str | None = None
    ) -> Approval:
        by = self.identities.canonical(by, "by")
        person = self.identities.person(by)
        reason = self.redactor.text(reason) if reason else reason
        for _ in range(CAS_RETRIES):
            approval = await self.get(approval_id)
            transition = rules.cancel(approval, by, reason, self.clock.now(), on_behalf_of, person)
            if await self._commit(approval, transition, by, None):
                return transition.approval
        raise Conflict("too much contention on this approval, retry")

    async def extend(
        self, approval_id: str, duration: timedelta, actor: str, *, channel: str | None = None, trusted: bool = False
    ) -> Approval:
        """Push the deadline back by one of the policy's `extend` durations (PolicyNotAllowed, 403,
        beyond what it allows). An approver of the approval, or an operator (`trusted`), may. The
        new wake-up is committed with the `extended` event and the card syncs; the scheduler
        re-arms on it (`observer.wake_at`)."""
        actor = self.identities.canonical(actor, "by")
        for _ in range(CAS_RETRIES):
            approval = await self.get(approval_id)
            if not trusted:
                self.check_may_decide(actor, approval)
            transition = extend_rules.extend(approval, duration, actor, self.clock.now())
            if await self._commit(approval, transition, actor, channel):
                return transition.approval
        raise Conflict("too much contention on this approval, retry")


@dataclass(frozen=True, slots=True)
class _Ballot:
    """How a vote came: its comment and channel, the platform's name for the voter, and whether
    the caller is an operator (`trusted`) or needs no check at all (a resume token)."""

    comment: str | None
    channel: str | None
    name: str | None
    trusted: bool = False
    check_approver: bool = True
    on_behalf_of: str | None = None
    args: dict[str, Any] | None = None  # edited args (approve with changes)
    seen: str | None = None  # the round tag the voter saw (None: not checked)
    seen_field: str = "round"  # how the caller named it, for the refusal
