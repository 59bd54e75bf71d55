"""Who may decide: the one function every decision path goes through (the API, a resume token, a
press on any channel, MCP, the SLA clock), switched only by the command's `Authority`."""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

from gateway.core import policy as rules
from gateway.core.identity import Identities
from gateway.core.models import Approval
from gateway.service.commands import Authority


class Claims(Protocol):
    async def claimed_groups(self, identity: str) -> frozenset[str]: ...


class Authorizer:
    def __init__(
        self, identities: Identities, allowlists: dict[str, frozenset[str]], claims: Claims | None = None
    ) -> None:
        self.identities = identities
        self._allowlists = allowlists
        self._claims = claims

    async def claimed(self, actor: str) -> frozenset[str]:
        """The groups the sign-ins of `actor`'s person claimed (`[web.oidc]`), to pass
        to `authorize`; none asked for while no sign-in can claim any."""
        if self._claims is None or not self.identities.claimable:
            return frozenset()
        out: set[str] = set()
        for identity in self.identities.identities_of(actor):
            out |= await self._claims.claimed_groups(identity)
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
    ) -> None:
        """NotAnApprover or RequesterCannotDecide unless `actor` (canonical) may act on
        `approval` as it is now. An approver must be on its channel's allowlist, narrowed by the
        approval's approvers, and never its requester, whatever it does (vote, extend). An
        operator manages any approval (extend, cancel: `decides=False`); to decide, it stands on
        its own allowlist, so the approval's approvers still narrow it and a requester never
        decides its own request. A token and the SLA clock are their own authority. Groups
        (`group:NAME`) are expanded here, with the groups `claimed` by the actor's sign-in
        (the store's `claimed_groups`) besides their configured members."""
        party = self.identities.party

        def member(group: str, identity: str) -> bool:
            return self.identities.in_group(group, identity, claimed if identity == actor else ())

        if authority is Authority.APPROVER:
            rules.check_may_decide(actor, approval, self.allowlist(actor), party, member)
        elif authority is Authority.OPERATOR and decides:
            rules.check_may_decide(actor, approval, (actor,), party, member)


__all__ = ["Authorizer", "Claims"]
