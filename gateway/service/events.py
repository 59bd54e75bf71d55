"""Outbound events: the outbox rows that announce a transition to the webhooks subscribed to it.

The rows are written in the transition's own transaction (`Committer.write`, the suspend's
`Creation`, a resume job's result), so an event exists if and only if its transition committed,
and it is built there once: its id (the `webhook-id`) and body never change across retries. The
outbox (gateway/delivery/events.py) signs and sends them; the dashboard reads `Webhooks.backlog`,
and an operator sends given-up ones again with `Webhooks.resend`.
"""

from __future__ import annotations

import base64
import secrets
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateway import contract
from gateway.core.clock import Clock
from gateway.core.errors import Conflict, NotFound, ValidationError
from gateway.core.events import EventKind
from gateway.core.models import Approval, DeliveryStatus, NewEvent, NewOutbox, OutboxKind
from gateway.core.observers import Observer
from gateway.core.webhooks import Backlog, address, envelope, kind_of, webhook_name
from gateway.service.operators import authorize_repair
from gateway.settings.events import EventsSettings
from gateway.store import Store

__all__ = ["Announcer", "ResendEvents", "Resent", "Webhooks", "new_event_id"]


def new_event_id() -> str:
    """`evt_` and 26 base32 characters (128 random bits): the CloudEvents id and `webhook-id`."""
    return "evt_" + base64.b32encode(secrets.token_bytes(16)).decode().rstrip("=").lower()


class Announcer:
    """Which webhooks hear of which kinds, and the rows that tell them."""

    def __init__(self, events: EventsSettings, source: str) -> None:
        self.webhooks, self.source = events.webhooks, source

    def wants(self, kind: str) -> bool:
        return any(kind in w.kinds for w in self.webhooks)

    def rows(
        self, kind: str, approval: Approval, at: datetime, facts: Mapping[str, Any] | None = None
    ) -> list[NewOutbox]:
        """One row per webhook subscribed to `kind`, each with the same event (one id)."""
        hooks = [w for w in self.webhooks if kind in w.kinds]
        if not hooks:
            return []
        doc = envelope(kind, new_event_id(), self.source, approval, at, facts or {})
        return [NewOutbox(approval.id, address(w.name), OutboxKind.EVENT, doc) for w in hooks]

    def announce(self, approval: Approval, events: Sequence[NewEvent]) -> list[NewOutbox]:
        """The rows for the approval events of one commit that webhooks hear of, in order."""
        out: list[NewOutbox] = []
        for e in events:
            kind = kind_of(e.kind)
            if kind is not None:
                out += self.rows(kind, approval, e.at, e.data)
        return out


@dataclass(frozen=True, slots=True)
class ResendEvents:
    """Send again the outbound events of `approval_id` that were given up, to every configured
    webhook or to `webhook` alone. `by` is the identity recorded (gateway.service.operators)."""

    approval_id: str
    by: str
    webhook: str | None = None
    on_behalf_of: str | None = None

    @classmethod
    def by_operator(cls, approval_id: str, body: dict[str, Any], by: str) -> ResendEvents:
        """An operator's `POST /v1/approvals/{id}/events/resend` body (the API's, the CLI's),
        checked by the contract: ValidationError names the field."""
        m = contract.validate(contract.EventsResendBody, body)
        return cls(approval_id, by, m.webhook, m.by or None)


@dataclass(frozen=True, slots=True)
class Resent:
    """What a resend queued: per webhook name, the ids of its events, in their order."""

    approval_id: str
    webhooks: dict[str, list[str]]

    def to_api(self) -> dict[str, Any]:
        """The answer of `POST /v1/approvals/{id}/events/resend` (and of the CLI's `--json`)."""
        return {"approval_id": self.approval_id, "webhooks": self.webhooks, "status": "pending"}


class Webhooks:
    """What the dashboard shows of the webhooks (each configured one with its backlog), and an
    operator's "send again"."""

    def __init__(
        self, store: Store, events: EventsSettings, clock: Clock, observer: Observer, *, has_operators: bool
    ) -> None:
        self.store, self.events, self.clock, self.observer = store, events, clock, observer
        self.has_operators = has_operators

    async def backlog(self) -> list[Backlog]:
        """Every configured webhook (an empty backlog when all is delivered), then any webhook
        no longer configured that still has events (given up when next claimed)."""
        found = {b.name: b for b in await self.store.webhook_backlog()}
        out = [found.pop(w.name, Backlog(w.name)) for w in self.events.webhooks]
        return out + sorted(found.values(), key=lambda b: b.name)

    async def resend(self, cmd: ResendEvents) -> Resent:
        """Queue again the approval's given-up events (API): each keeps its id and document, and
        its place in the approval's order (the outbox sends an approval's events to a webhook one
        after the other, by their rows' order); each gets a fresh `give_up_after`. A webhook no
        longer configured gets nothing (its events would only be given up again). One
        `event_resend` per webhook records who did it; the outbox is woken."""
        authorize_repair(cmd.by, has_operators=self.has_operators)
        configured = [w.name for w in self.events.webhooks]
        if cmd.webhook is not None and cmd.webhook not in configured:
            known = ", ".join(configured) or "none is configured"
            raise ValidationError("webhook", f"not a configured webhook (known: {known})")
        if await self.store.get_approval(cmd.approval_id) is None:
            raise NotFound(f"approval {cmd.approval_id!r} not found")
        wanted = {cmd.webhook} if cmd.webhook is not None else set(configured)
        ids: list[int] = []
        by_hook: dict[str, list[str]] = defaultdict(list)
        for row in await self.store.list_outbox(cmd.approval_id):  # in id order: the sending order
            name = webhook_name(row.channel)
            if row.kind is OutboxKind.EVENT and row.status is DeliveryStatus.FAILED and name in wanted:
                ids.append(row.id)
                by_hook[str(name)].append(str(row.data.get("id")))
        if not ids:
            where = f"webhook {cmd.webhook!r}" if cmd.webhook else "any configured webhook"
            raise Conflict(f"no event of {cmd.approval_id!r} to {where} was given up: nothing to resend")
        now = self.clock.now()
        extra = {"on_behalf_of": cmd.on_behalf_of} if cmd.on_behalf_of else {}
        events = [
            NewEvent(cmd.approval_id, EventKind.EVENT_RESEND, now, cmd.by, address(name), {"events": sent, **extra})
            for name, sent in by_hook.items()
        ]
        if not await self.store.requeue_events(ids, now, events):  # another operator's resend came first
            raise Conflict(f"the given-up events of {cmd.approval_id!r} were sent again already: nothing to resend")
        self.observer.outbox_queued()
        return Resent(cmd.approval_id, dict(by_hook))
