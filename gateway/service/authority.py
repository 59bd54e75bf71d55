"""Who may decide: the one function every decision path goes through (the API, a resume token, a
press on any channel, MCP, the SLA clock), switched only by the command's `Authority`."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime, timedelta
from typing import Protocol

from gateway.core import policy as rules
from gateway.core.clock import Clock
from gateway.core.delegation import Delegation, acting_for
from gateway.core.errors import NotAnApprover, RequesterCannotDecide
from gateway.core.identity import Identities
from gateway.core.models import Approval
from gateway.service.commands import Authority


class Claims(Protocol):
    async def claimed_groups(self, identity: str, since: datetime) -> frozenset[str]: ...


class Authorizer:
    def __init__(
        self,
        identities: Identities,
        allowlists: dict[str, frozenset[str]],
        claims: Claims | None = None,
        clock: Clock | None = None,
        claims_last: timedelta = timedelta(hours=12),
    ) -> None:
        self.identities = identities
        self._allowlists = allowlists
        self._claims = claims
        self._clock = clock
        self._claims_last = claims_last  # web.session_max_age: a claim lasts as a session may

    async def claimed(self, actor: str) -> frozenset[str]:
        """The groups the sign-ins of `actor`'s person claimed (`[web.oidc]`), to pass
        to `authorize`; none asked for while no sign-in can claim any."""
        if self._claims is None or self._clock is None or not self.identities.claimable:
            return frozenset()
        since = self._clock.now() - self._claims_last
        out: set[str] = set()
        for identity in self.identities.identities_of(actor):
            out |= await self._claims.claimed_groups(identity, since)
        return frozenset(out)

    def allowlist(self, actor: str) -> frozenset[str]:
        """The configured approvers of `actor`'s kind (canonical identities)."""
        return self._allowlists.get(actor.partition(":")[0], frozenset())  # an identity is 'kind:id'

    def actor(self, actor: str, authority: Authority, field: str = "by") -> str:
        """The actor in canonical form (a ValidationError naming `field` otherwise); a token's
        actor is a fixed name, not an identity."""
        return actor if authority is Authority.TOKEN else self.identities.canonical(actor, field)

    def authorize(
        self,
        authority: Authority,
        actor: str,
        approval: Approval,
        *,
        decides: bool = True,
        claimed: Collection[str] = (),
        delegations: Sequence[Delegation] = (),
        now: datetime | None = None,
    ) -> Delegation | None:
        """NotAnApprover or RequesterCannotDecide unless `actor` (canonical) may act on
        `approval` as it is now. An approver must be on its channel's allowlist, narrowed by the
        approval's approvers, and never its requester, whatever it does (vote, extend). An
        operator manages any approval (extend, cancel: `decides=False`); to decide, it stands on
        its own allowlist, so the approval's approvers still narrow it and a requester never
        decides its own request. A token and the SLA clock are their own authority.

        Groups (`group:NAME`) are expanded here, with the groups `claimed` by the actor's
        sign-in (the store's `claimed_groups`) besides their configured members.

        An approver who may not decide on their own may through one of `delegations` (those to
        them, active at `now`): the delegator is checked instead (gateway.core.delegation), with
        the groups configured for the delegator only (a sign-in's claims are the actor's), and
        that delegation is returned (None: the actor acts as themselves)."""
        member = self._member(actor, claimed)
        if authority is Authority.APPROVER:
            try:
                self._approver(actor, approval, member)
            except NotAnApprover:
                via = self._delegated(actor, approval, delegations, now, member)
                if via is None:
                    raise
                return via
        elif authority is Authority.OPERATOR and decides:
            rules.check_may_decide(actor, approval, (actor,), self.identities.party, member)
        return None

    def _member(self, actor: str, claimed: Collection[str]) -> Callable[[str, str], bool]:
        def member(group: str, identity: str) -> bool:
            return self.identities.in_group(group, identity, claimed if identity == actor else ())

        return member

    def _approver(self, actor: str, approval: Approval, member: Callable[[str, str], bool]) -> None:
        """An approver's own check, for themselves or for a delegator."""
        rules.check_may_decide(actor, approval, self.allowlist(actor), self.identities.party, member)

    def _delegated(
        self,
        actor: str,
        approval: Approval,
        delegations: Sequence[Delegation],
        now: datetime | None,
        member: Callable[[str, str], bool],
    ) -> Delegation | None:
        if not delegations or now is None:
            return None

        def may_decide(delegator: str) -> bool:
            try:
                self._approver(delegator, approval, member)
            except (NotAnApprover, RequesterCannotDecide):
                return False
            return True

        return acting_for(actor, approval, delegations, now, self.identities.party, may_decide)


__all__ = ["Authorizer", "Claims"]
