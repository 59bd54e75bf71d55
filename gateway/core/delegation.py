"""Delegation, pure: a person (the delegator) lets another (the delegate) decide for them during a
window, e.g. while on holiday. The delegate decides what the delegator may decide, as the
delegator's party (one person in a quorum), and the decision records `on_behalf_of`.

A delegation only carries the delegator's rights: the delegator is checked against the approval
(allowlist, approvers, requester) exactly as if they pressed, the delegate's own rights are
unchanged, a delegated right is never delegated on, and a requester never decides through one.
Nothing here does I/O or reads a clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from gateway.core.clock import iso
from gateway.core.errors import ValidationError
from gateway.core.models import Approval

MAX_WINDOW = timedelta(days=90)  # a longer absence is a change of approvers, made in the config
MAX_LEAD = timedelta(days=365)  # how far ahead a delegation may start (and dates stay storable)


@dataclass(frozen=True, slots=True)
class Delegation:
    """`delegate` decides for `delegator` from `starts_at` until `ends_at` (both canonical
    identities), unless revoked. `created_by` is the operator or web user who made it."""

    id: str
    delegator: str
    delegate: str
    starts_at: datetime
    ends_at: datetime
    created_by: str
    created_at: datetime
    reason: str | None = None
    revoked_at: datetime | None = None
    revoked_by: str | None = None
    uses: int = 0  # decisions made through it
    last_used_at: datetime | None = None

    def active(self, now: datetime) -> bool:
        return self.revoked_at is None and self.starts_at <= now < self.ends_at

    def to_api(self, now: datetime | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "delegator": self.delegator,
            "delegate": self.delegate,
            "from": iso(self.starts_at),
            "until": iso(self.ends_at),
            "reason": self.reason,
            "created_by": self.created_by,
            "created_at": iso(self.created_at),
            "revoked_at": iso(self.revoked_at),
            "revoked_by": self.revoked_by,
            "uses": self.uses,
            "last_used_at": iso(self.last_used_at),
        }
        if now is not None:
            out["active"] = self.active(now)
        return out


@dataclass(frozen=True, slots=True)
class DelegationEvent:
    """One line of a delegation's audit trail: `created`, `revoked`, or `used` (a decision made
    through it on `approval_id`)."""

    delegation_id: str
    at: datetime
    kind: str
    actor: str
    approval_id: str | None = None

    def to_api(self) -> dict[str, Any]:
        return {"at": iso(self.at), "kind": self.kind, "actor": self.actor, "approval_id": self.approval_id}


def check_window(starts_at: datetime, ends_at: datetime, now: datetime) -> None:
    """A ValidationError naming the field unless [starts_at, ends_at) is a window that starts
    within MAX_LEAD, ends in the future and lasts at most MAX_WINDOW."""
    if starts_at - now > MAX_LEAD:
        raise ValidationError("from", f"a delegation starts within {MAX_LEAD.days} days")
    if ends_at <= starts_at:
        raise ValidationError("until", "must be after from")
    if ends_at <= now:
        raise ValidationError("until", "must be in the future")
    if ends_at - starts_at > MAX_WINDOW:
        raise ValidationError("until", f"a delegation lasts at most {MAX_WINDOW.days} days")


def check_parties(delegator: str, delegate: str, party: Callable[[str], str]) -> None:
    if party(delegator) == party(delegate):
        raise ValidationError("delegate", "must be another person than the delegator")


def acting_for(
    actor: str,
    approval: Approval,
    delegations: Iterable[Delegation],
    now: datetime,
    party: Callable[[str], str],
    may_decide: Callable[[str], bool],
) -> Delegation | None:
    """The delegation through which `actor` (who may not decide `approval` on their own) may
    decide it at `now`, for its delegator; None if there is none. `may_decide(delegator)` is the
    delegator's own check (never one through a delegation: rights are not delegated on). The
    requester decides through no delegation, and nobody decides for the requester. A delegate
    who already voted for one delegator acts for that one again (their vote then counts once)."""
    me = party(actor)
    requester = party(approval.requested_by) if approval.requested_by else None
    if me == requester:
        return None
    earlier = {v.counts_as for v in approval.votes if v.delegation is not None and party(v.approver) == me}
    for d in sorted(delegations, key=lambda d: (d.created_at, d.id)):
        whom = party(d.delegator)
        if not d.active(now) or party(d.delegate) != me or whom in (me, requester):
            continue
        if earlier and whom not in earlier:
            continue
        if may_decide(d.delegator):
            return d
    return None


__all__ = ["MAX_LEAD", "MAX_WINDOW", "Delegation", "DelegationEvent", "acting_for", "check_parties", "check_window"]
