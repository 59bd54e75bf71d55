"""Delegations as use cases: create (an operator for anyone, a person for themselves), list,
revoke (an operator, or either person of it), the ones in force for an actor (loaded before a
decision is authorized: gateway.service.authority), and the `used` line a decision through one
leaves on its audit trail.

The pure parts (the window, who may act through one) are gateway.core.delegation.
"""

from __future__ import annotations

import base64
import builtins
import logging
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateway import contract
from gateway.core import delegation as core
from gateway.core.clock import Clock
from gateway.core.delegation import Delegation, DelegationEvent
from gateway.core.errors import Forbidden, NotFound, ValidationError
from gateway.core.identity import Identities
from gateway.store import Store

log = logging.getLogger("gateway.service")


def new_delegation_id() -> str:
    """16 lowercase base32 characters (80 random bits), like an approval's id."""
    return base64.b32encode(secrets.token_bytes(10)).decode().lower()


@dataclass(frozen=True, slots=True)
class Delegate:
    """`POST /v1/delegations`, or the inbox's form: `delegate` decides for `delegator` from
    `starts_at` (None: now) until `ends_at`. `by` is who asks: an operator (`operator=True`) for
    anyone, anyone else only for themselves."""

    delegator: str
    delegate: str
    ends_at: datetime
    by: str
    operator: bool
    starts_at: datetime | None = None
    reason: str | None = None

    @classmethod
    def by_operator(cls, body: dict[str, Any], by: str) -> Delegate:
        """An operator's `POST /v1/delegations` body (the API's, the CLI's), checked by the
        contract: ValidationError names the field."""
        m = contract.validate(contract.DelegationBody, body)
        return cls(m.delegator, m.delegate, m.until, by, True, m.starts_at, m.reason)


class Delegations:
    def __init__(self, store: Store, clock: Clock, identities: Identities) -> None:
        self.store, self.clock, self.identities = store, clock, identities

    async def create(self, cmd: Delegate) -> Delegation:
        delegator = self.identities.canonical(cmd.delegator, "delegator")
        delegate = self.identities.canonical(cmd.delegate, "delegate")
        party = self.identities.party
        if not cmd.operator and party(delegator) != party(cmd.by):
            raise Forbidden(f"{cmd.by} may delegate only their own approvals, not {delegator}'s")
        core.check_parties(delegator, delegate, party)
        if cmd.reason is not None and "\x00" in cmd.reason:  # a text column: PostgreSQL refuses it (a 500)
            raise ValidationError("reason", "holds a NUL character")
        now = self.clock.now()
        starts = cmd.starts_at or now
        core.check_window(starts, cmd.ends_at, now)
        made = Delegation(new_delegation_id(), delegator, delegate, starts, cmd.ends_at, cmd.by, now, cmd.reason)
        await self.store.create_delegation(made)
        log.info(
            "delegation %s: %s decides for %s until %s (by %s)", made.id, delegate, delegator, made.ends_at, cmd.by
        )
        return made

    async def events(self, delegation_id: str) -> list[DelegationEvent]:
        return await self.store.delegation_events(delegation_id)

    async def list(self, *, live: bool = True, of: str | None = None, limit: int = 500) -> list[Delegation]:
        """Newest first; `of` keeps those where that person is the delegator or the delegate."""
        items = await self.store.list_delegations(self.clock.now(), live=live, limit=limit)
        if of is not None:
            me = self.identities.party(of)
            items = [d for d in items if me in (self.identities.party(d.delegator), self.identities.party(d.delegate))]
        return items

    async def views(self, *, live: bool, of: str | None) -> builtins.list[dict[str, Any]]:  # `list`: the method
        """`list` as the API shows it; `of` is canonicalised first (ValidationError naming `of`)."""
        whose = self.identities.canonical(of, "of") if of is not None else None
        return [self.view(d) for d in await self.list(live=live, of=whose)]

    async def trail(self, delegation_id: str) -> dict[str, Any]:
        """One delegation as the API shows it, with its audit trail (`events`)."""
        found = await self.get(delegation_id)
        return {**self.view(found), "events": [e.to_api() for e in await self.events(found.id)]}

    async def get(self, delegation_id: str) -> Delegation:
        found = await self.store.get_delegation(delegation_id)
        if found is None:
            raise NotFound(f"delegation {delegation_id!r} not found")
        return found

    async def revoke(self, delegation_id: str, by: str, *, operator: bool) -> Delegation:
        """Revoke (idempotent: a revoked delegation is answered as it is). Operators revoke any;
        a person only one they are the delegator or the delegate of (Forbidden otherwise)."""
        found = await self.get(delegation_id)
        party = self.identities.party
        if not operator and party(by) not in (party(found.delegator), party(found.delegate)):
            raise Forbidden(f"{by} is neither the delegator nor the delegate of {delegation_id}")
        if found.revoked_at is None and await self.store.revoke_delegation(found.id, by, self.clock.now()):
            log.info("delegation %s revoked by %s", found.id, by)
            found = await self.get(delegation_id)
        return found

    async def to(self, actor: str, now: datetime) -> tuple[Delegation, ...]:
        """The delegations in force at `now` whose delegate is `actor` (as a person)."""
        me = self.identities.party(actor)
        found: dict[str, Delegation] = {}
        for identity in self.identities.identities_of(actor):  # a person's few identities, each indexed
            found |= {d.id: d for d in await self.store.active_delegations(now, identity)}
        live = sorted(found.values(), key=lambda d: (d.created_at, d.id))
        return tuple(d for d in live if self.identities.party(d.delegate) == me)

    def view(self, d: Delegation) -> dict[str, Any]:
        return d.to_api(self.clock.now())


__all__ = ["Delegate", "Delegations", "new_delegation_id"]
