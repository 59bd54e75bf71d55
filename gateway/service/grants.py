"""Standing grants as use cases: the grant an approve makes (planned into the vote's Step, so it
commits with the transition), the grant that decides a suspend (after the rules: a rule's deny
still denies), and listing and revoking them (operators, and the person who granted one).

The pure parts (what a grant covers, its lifetime, the policy keys) are gateway.core.grants.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from gateway.core import grants as core
from gateway.core.clock import Clock, iso
from gateway.core.errors import Forbidden, NotFound, ValidationError
from gateway.core.events import EventKind
from gateway.core.grants import Grant
from gateway.core.identity import Identities
from gateway.core.models import Approval, Decision, NewEvent, Outcome, Source, Status
from gateway.core.policy import Transition
from gateway.core.sealing import Sealer
from gateway.service import edits as service_edits
from gateway.service.commands import Authority, CastVote
from gateway.store import Store

_PEOPLE = (Authority.APPROVER, Authority.OPERATOR)  # a token or the SLA clock never grants


def check_vote(approval: Approval, cmd: CastVote) -> str | None:
    """The offer a vote asks for (`cmd.grant`), as the policy spells it; None without one. A
    ValidationError naming `grant` when it cannot carry one."""
    if cmd.grant is None:
        return None
    if cmd.outcome is not Outcome.APPROVE:
        raise ValidationError("grant", "only an approve carries a grant")
    if cmd.authority not in _PEOPLE:
        raise ValidationError("grant", "only a person or an operator grants")
    if cmd.args is not None:
        raise ValidationError("grant", "a grant covers the args as asked: approve the edited args without one")
    if approval.policy.quorum > 1:
        raise ValidationError(
            "grant", f"policy {approval.policy.name!r} needs {approval.policy.quorum} approvers: one cannot grant"
        )
    return core.chosen(approval.policy, cmd.grant)


def with_grant(
    sealer: Sealer,
    before: Approval,
    transition: Transition,
    offer: str | None,
    actor: str,
    person: str | None,
    grant_id: str,
    now: datetime,
) -> tuple[Transition, Grant | None]:
    """The grant `offer` makes when this vote approves (not when it only counts toward a quorum),
    bound to the covered args of the raw request; its id and expiry go in the `approved` data."""
    if offer is None or transition.approval.status is not Status.APPROVED:
        return transition, None
    fields = before.policy.grant_fields
    if fields is None:
        covered = before.args_hash  # the same hash as the approval's (all the args, raw)
    else:
        covered = core.covered_hash(service_edits.raw_sealed(sealer, before)["args"], fields)
    grant = core.make(grant_id, before, offer, covered, actor, person, now)
    data = {**transition.data, "grant": grant.id, "grant_for": offer, "grant_expires_at": iso(grant.expires_at)}
    return replace(transition, data=data), grant


def decide(approval: Approval, grant: Grant, now: datetime) -> tuple[Approval, NewEvent]:
    """The approval as a covering grant leaves it (approved, like a rule's allow), and its event."""
    reason = f"standing grant ({grant.duration}) by {grant.shown_by}"
    decision = Decision(Outcome.APPROVE, grant.decided_by, now, Source.GRANT, reason=reason)
    after = approval.evolve(status=Status.APPROVED, decision=decision, wake_at=None)
    data = {"outcome": "approve", "grant": grant.id, "granted_by": grant.granted_by, "args_hash": approval.args_hash}
    return after, NewEvent(approval.id, EventKind.APPROVED, now, grant.decided_by, None, data)


class Grants:
    """Listing, reading and revoking grants; finding the one that covers a suspend."""

    def __init__(self, store: Store, clock: Clock, identities: Identities) -> None:
        self.store, self.clock, self.identities = store, clock, identities

    async def covering(
        self, namespace: str, step: str, run_id: str, args: dict[str, Any], now: datetime
    ) -> Grant | None:
        candidates = await self.store.live_grants(namespace, step, run_id, now)
        return core.first_covering(candidates, namespace, step, run_id, args, now)

    async def list(self, *, live: bool = True, granted_by: str | None = None, limit: int = 100) -> list[Grant]:
        """Newest first; `granted_by` keeps the grants of that person (a web user's own)."""
        items = await self.store.list_grants(self.clock.now(), live=live, limit=limit)
        if granted_by is not None:
            party = self.identities.party(granted_by)
            items = [g for g in items if self.identities.party(g.granted_by) == party]
        return items

    async def get(self, grant_id: str) -> Grant:
        grant = await self.store.get_grant(grant_id)
        if grant is None:
            raise NotFound(f"grant {grant_id!r} not found")
        return grant

    async def revoke(self, grant_id: str, by: str, *, operator: bool) -> Grant:
        """Revoke (idempotent: a revoked grant is answered as it is). Operators revoke any; a
        person only the grants they made (Forbidden otherwise). A `grant_revoked` event goes on
        the approval that made it."""
        grant = await self.get(grant_id)
        if not operator and self.identities.party(grant.granted_by) != self.identities.party(by):
            raise Forbidden(f"{by} did not grant {grant_id}: only its granter or an operator revokes it")
        if grant.revoked_at is None:
            now = self.clock.now()
            event = NewEvent(grant.approval_id, EventKind.GRANT_REVOKED, now, by, None, {"grant": grant.id})
            await self.store.revoke_grant(grant.id, by, now, [event])
            grant = await self.get(grant_id)
        return grant

    def view(self, grant: Grant) -> dict[str, Any]:
        return grant.to_api(self.clock.now())


__all__ = ["Grants", "check_vote", "decide", "with_grant"]
