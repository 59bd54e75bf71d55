"""The decision use cases: votes (with edited args), comments, denied presses, cancels and
extensions. Each takes a frozen command (gateway.service.commands), authorizes it once per read
of the approval (gateway.service.authority) and plans a Step for the one compare-and-set loop
(gateway.service.commit); the pure rules (gateway.core.policy, rounds, extend) say what happens.
"""

from __future__ import annotations

import base64
import logging
import secrets
from collections.abc import Collection
from dataclasses import replace

from gateway.core import extend as extend_rules
from gateway.core import policy as rules
from gateway.core import rounds
from gateway.core.clock import Clock
from gateway.core.delegation import Delegation, DelegationEvent
from gateway.core.errors import Forbidden, NotAnApprover, StaleRound, ValidationError
from gateway.core.events import EventKind
from gateway.core.models import Approval, NewEvent, NewOutbox, OutboxKind, Outcome, Vote
from gateway.core.redact import Redactor
from gateway.core.sealing import Sealer
from gateway.core.tokens import TokenSigner
from gateway.service import edits as service_edits
from gateway.service import grants as service_grants
from gateway.service.authority import Authorizer
from gateway.service.commands import AddComment, Authority, Cancel, CastVote, Extend
from gateway.service.commit import Committer, Done, Step
from gateway.service.delegations import Delegations
from gateway.store import DelegationUnavailable, SeenBefore, Store

log = logging.getLogger("gateway.service")


def new_grant_id() -> str:
    """16 lowercase base32 characters (80 random bits), like an approval's id."""
    return base64.b32encode(secrets.token_bytes(10)).decode().lower()


DENIED_KEPT = 5  # `denied` events kept per person and approval


class Decisions:
    def __init__(
        self,
        committer: Committer,
        authorizer: Authorizer,
        store: Store,
        clock: Clock,
        redactor: Redactor,
        sealer: Sealer,
        signer: TokenSigner,
    ) -> None:
        self.committer, self.authorizer, self.store, self.clock = committer, authorizer, store, clock
        self.redactor, self.sealer, self.signer = redactor, sealer, signer
        self.identities = authorizer.identities
        self.delegations = Delegations(store, clock, self.identities)

    async def authorize(
        self,
        authority: Authority,
        actor: str,
        approval: Approval,
        *,
        decides: bool = True,
        claimed: Collection[str] | None = None,
    ) -> Delegation | None:
        """`Authorizer.authorize` (`claimed`: the actor's groups from sign-in, read here when not
        given: `Authorizer.claimed`);
        where it refuses an approver (NotAnApprover), again with the delegations to them in force
        now, read only then (an approver's own vote costs no read). The delegation they decide
        through, if any."""
        if claimed is None:
            claimed = await self.authorizer.claimed(actor)
        try:
            return self.authorizer.authorize(authority, actor, approval, decides=decides, claimed=claimed)
        except NotAnApprover:
            if authority is not Authority.APPROVER:
                raise
            now = self.clock.now()
            delegations = await self.delegations.to(actor, now)
            if not delegations:
                raise
            return self.authorizer.authorize(
                authority, actor, approval, decides=decides, claimed=claimed, delegations=delegations, now=now
            )

    async def cast(
        self, cmd: CastVote, *, current: Approval | None = None, current_via: Delegation | None = None
    ) -> Done:
        """Commit a vote; the Done says what it did (approved, rejected, vote, duplicate_vote,
        edited), so that a presser is told what was committed. `current`: the approval as the
        caller read and authorized it (a press), used for the first attempt as it is, and
        `current_via` the delegation that authorization found (`authorize`). The command's
        `marks` are recorded with whatever it writes once it returns; SeenBefore (nothing
        written) when they were recorded before."""
        actor = self.authorizer.actor(cmd.actor, cmd.authority)
        person = self.identities.person(actor) if cmd.authority is not Authority.TOKEN else None
        comment = self.redactor.text(cmd.comment) if cmd.comment else cmd.comment
        claimed = await self.authorizer.claimed(actor)

        async def plan(approval: Approval) -> Step | Done:
            if approval.status.final:
                raise rules.already_decided(approval)
            via = (
                await self.authorize(cmd.authority, actor, approval, claimed=claimed)
                if approval is not current
                else current_via
            )
            if (
                cmd.seen is not None
                and cmd.outcome is Outcome.APPROVE
                and not rounds.saw_current(self.signer, approval, cmd.seen)
            ):
                raise StaleRound(
                    cmd.seen_field,
                    f"the arguments changed since this was drawn (round {rounds.round_number(approval)} votes"
                    " on other args): look at the updated card; nothing was recorded",
                )
            service_edits.check_reason(approval, cmd.outcome, comment)
            offer = service_grants.check_vote(approval, cmd)
            if offer is not None and via is not None:
                # a grant approves what follows, after the delegation may be over: a right delegated on
                raise ValidationError(
                    "grant", f"{actor} decides for {via.delegator} one approval at a time: a standing grant is theirs"
                )
            proposal, sealed = None, None
            if cmd.args is not None:
                if cmd.outcome is not Outcome.APPROVE:
                    raise ValidationError("args", "only an approval carries edited args")
                proposal, sealed = await service_edits.propose(
                    self.sealer, self.redactor, approval, cmd.args, actor, person or cmd.name
                )
            now = self.clock.now()
            vote = Vote(actor, cmd.outcome, now, comment, cmd.channel, cmd.on_behalf_of, person=person, name=cmd.name)
            if via is not None:  # a delegate decides for the delegator: one party with them
                vote = replace(
                    vote,
                    on_behalf_of=via.delegator,
                    delegation=via.id,
                    counts_as=self.identities.party(via.delegator),
                )
            transition = rounds.vote_on(approval, vote, proposal)
            if sealed is not None:
                transition = replace(transition, approval=transition.approval.evolve(sealed=sealed))
            if vote.on_behalf_of:
                extra = {"on_behalf_of": vote.on_behalf_of} | ({"delegation": via.id} if via else {})
                transition = replace(transition, data={**transition.data, **extra})
            transition, grant = service_grants.with_grant(
                self.sealer, approval, transition, offer, actor, person, new_grant_id(), now
            )
            if transition.approval is approval:  # the same person approving twice counts once
                event = NewEvent(approval.id, transition.event, now, actor, cmd.channel, dict(transition.data))
                await self._unchanged(event, cmd.marks)
                return Done(approval, transition.event)
            # the delegation's use commits with the vote, only while it is in force
            use = DelegationEvent(via.id, now, "used", actor, approval.id) if via is not None else None
            return Step(transition, actor, cmd.channel, grant=grant, delegation=use, marks=cmd.marks)

        try:
            return await self.committer.transact(cmd.approval_id, plan, current=current)
        except DelegationUnavailable as exc:
            raise NotAnApprover(f"{actor} decides for nobody now: delegation {exc} was revoked or ended") from None

    async def _unchanged(self, event: NewEvent, marks: tuple[str, ...]) -> None:
        """A vote that changes nothing (a second approve by the same person): only its event,
        with the press's marks (SeenBefore, nothing written, if they were recorded before)."""
        if not marks:
            await self.store.append_events([event])
        elif not await self.store.remember_delivery(marks, event.at, [event]):
            raise SeenBefore(marks[0])  # a redelivery of the press that voted: nothing twice

    async def check_vote(
        self, approval: Approval, outcome: Outcome, actor: str, *, args: dict[str, object] | None, comment: str | None
    ) -> None:
        """The ValidationError a vote with these args and comment would get (nothing committed)."""
        service_edits.check_reason(approval, outcome, comment)
        if args is not None:
            if outcome is not Outcome.APPROVE:
                raise ValidationError("args", "only an approval carries edited args")
            await service_edits.propose(self.sealer, self.redactor, approval, args, actor, None)

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

    async def comment(self, cmd: AddComment) -> Approval:
        """The comment (redacted) goes on the decision and every card is synced; only the person
        who decided may add it."""
        actor = self.identities.canonical(cmd.actor, "by")
        text = self.redactor.text(cmd.comment)

        async def plan(approval: Approval) -> Step:
            decision = approval.decision
            if decision is None or decision.decided_by != actor:
                raise Forbidden(f"{actor} did not decide this approval")
            after = approval.evolve(decision=replace(decision, comment=text), version=approval.version + 1)
            transition = rules.Transition(after, EventKind.COMMENT_ADDED, False, {"by": actor, "comment": text})
            syncs = [NewOutbox(approval.id, c, OutboxKind.SYNC) for c in approval.channels]
            return Step(transition, actor, cmd.channel, syncs)

        return (await self.committer.transact(cmd.approval_id, plan)).approval

    async def cancel(self, cmd: Cancel) -> Approval:
        by = self.identities.canonical(cmd.by, "by")
        person = self.identities.person(by)
        reason = self.redactor.text(cmd.reason) if cmd.reason else cmd.reason
        claimed = await self.authorizer.claimed(by)

        async def plan(approval: Approval) -> Step:
            self.authorizer.authorize(cmd.authority, by, approval, decides=False, claimed=claimed)
            transition = rules.cancel(approval, by, reason, self.clock.now(), cmd.on_behalf_of, person)
            return Step(transition, by, None)

        return (await self.committer.transact(cmd.approval_id, plan)).approval

    async def extend(self, cmd: Extend, *, current: Approval | None = None) -> Approval:
        """Push the deadline back (PolicyNotAllowed, 403, beyond what the policy allows). The new
        wake-up is committed with the `extended` event and the card syncs; the scheduler re-arms
        on it (`observer.wake_at`). `current`: as in `cast`. The command's `marks` commit in the
        same write: SeenBefore (nothing written) when they were recorded before, so that a
        redelivered '+1h' never extends twice, and one whose first delivery died before this
        commit still extends."""
        actor = self.identities.canonical(cmd.actor, "by")
        claimed = await self.authorizer.claimed(actor)

        async def plan(approval: Approval) -> Step:
            if approval is not current:
                self.authorizer.authorize(cmd.authority, actor, approval, decides=False, claimed=claimed)
            transition = extend_rules.extend(approval, cmd.duration, actor, self.clock.now(), seen=cmd.seen)
            return Step(transition, actor, cmd.channel, marks=cmd.marks)

        return (await self.committer.transact(cmd.approval_id, plan, current=current)).approval


__all__ = ["DENIED_KEPT", "Decisions"]
