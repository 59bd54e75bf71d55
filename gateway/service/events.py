"""Outbound events: the outbox rows that announce a transition to the webhooks subscribed to it.

The rows are written in the transition's own transaction (`Committer.write`, the suspend's
`Creation`, a resume job's result), so an event exists if and only if its transition committed,
and it is built there once: its id (the `webhook-id`) and body never change across retries. The
outbox (gateway/delivery/events.py) signs and sends them; the dashboard reads `Webhooks.backlog`.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from gateway.core.models import Approval, NewEvent, NewOutbox, OutboxKind
from gateway.core.webhooks import Backlog, address, envelope, kind_of
from gateway.settings.events import EventsSettings
from gateway.store import Store

__all__ = ["Announcer", "Webhooks", "new_event_id"]


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


class Webhooks:
    """What the dashboard shows of the webhooks: each configured one with its backlog."""

    def __init__(self, store: Store, events: EventsSettings) -> None:
        self.store, self.events = store, events

    async def backlog(self) -> list[Backlog]:
        """Every configured webhook (an empty backlog when all is delivered), then any webhook
        no longer configured that still has events (given up when next claimed)."""
        found = {b.name: b for b in await self.store.webhook_backlog()}
        out = [found.pop(w.name, Backlog(w.name)) for w in self.events.webhooks]
        return out + sorted(found.values(), key=lambda b: b.name)
