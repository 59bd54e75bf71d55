"""Who may decide: the one function every decision path goes through (the API, a resume token, a
press on any channel, MCP, the SLA clock), switched only by the command's `Authority`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from gateway.core import policy as rules
from gateway.core.delegation import Delegation, acting_for
from gateway.core.errors import NotAnApprover, RequesterCannotDecide
from gateway.core.identity import Identities
from gateway.core.models import Approval
from gateway.service.commands import Authority


class Authorizer:
    def __init__(self, identities: Identities, allowlists: dict[str, frozenset[str]]) -> None:
        self.identities = identities
        self._allowlists = allowlists

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
        delegations: Sequence[Delegation] = (),
        now: datetime | None = None,
    ) -> Delegation | None:
        """NotAnApprover or RequesterCannotDecide unless `actor` (canonical) may act on
        `approval` as it is now. An approver must be on its channel's allowlist, narrowed by the
        approval's approvers, and never its requester, whatever it does (vote, extend). An
        operator manages any approval (extend, cancel: `decides=False`); to decide, it stands on
        its own allowlist, so the approval's approvers still narrow it and a requester never
        decides its own request. A token and the SLA clock are their own authority.

        An approver who may not decide on their own may through one of `delegations` (those to
        them, active at `now`): the delegator is checked instead (gateway.core.delegation), and
        that delegation is returned (None: the actor acts as themselves)."""
        if authority is Authority.APPROVER:
            try:
                self._approver(actor, approval)
            except NotAnApprover:
                via = self._delegated(actor, approval, delegations, now)
                if via is None:
                    raise
                return via
        elif authority is Authority.OPERATOR and decides:
            rules.check_may_decide(actor, approval, (actor,), self.identities.party)
        return None

    def _approver(self, actor: str, approval: Approval) -> None:
        """An approver's own check, for themselves or for a delegator."""
        rules.check_may_decide(actor, approval, self.allowlist(actor), self.identities.party)

    def _delegated(
        self, actor: str, approval: Approval, delegations: Sequence[Delegation], now: datetime | None
    ) -> Delegation | None:
        if not delegations or now is None:
            return None

        def may_decide(delegator: str) -> bool:
            try:
                self._approver(delegator, approval)
            except (NotAnApprover, RequesterCannotDecide):
                return False
            return True

        return acting_for(actor, approval, delegations, now, self.identities.party, may_decide)


__all__ = ["Authorizer"]
