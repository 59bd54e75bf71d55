"""Card deliveries: what the outbox reads and writes, and an operator's `ResendCard`.

The outbox (gateway/delivery/outbox.py) decides how to send a row through its channel; every
read and write it does goes through `Deliveries`, which holds the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from gateway.core.clock import Clock
from gateway.core.errors import Conflict, NotFound, UnknownChannel
from gateway.core.events import EventKind
from gateway.core.models import Approval, Card, DeliveryStatus, Event, NewEvent, OutboxItem
from gateway.core.observers import Observer
from gateway.service.operators import authorize_repair
from gateway.store import CardUpdate, Store

__all__ = ["CardUpdate", "Deliveries", "ResendCard"]


@dataclass(frozen=True, slots=True)
class ResendCard:
    """Post again the card of `approval_id` on `address` whose post failed for good or is
    `uncertain` (it may be in the chat already: a second card is then possible, which the
    operator accepts). `by` is the identity recorded (gateway.service.operators)."""

    approval_id: str
    address: str
    by: str
    on_behalf_of: str | None = None


class Deliveries:
    def __init__(self, store: Store, clock: Clock, observer: Observer, *, has_operators: bool) -> None:
        self.store, self.clock, self.observer = store, clock, observer
        self.has_operators = has_operators

    # ---------------------------------------------------------------- the outbox's loop
    async def claim(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[OutboxItem]:
        return await self.store.claim_outbox(now, owner, lease, limit)

    async def finish(
        self,
        item_id: int,
        owner: str,
        *,
        now: datetime,
        status: DeliveryStatus,
        next_attempt_at: datetime | None = None,
        error: str | None = None,
        card: CardUpdate | None = None,
        events: Sequence[NewEvent] = (),
        count_attempt: bool = True,
    ) -> bool:
        """Record a row's outcome (and its card, and its events) if `owner` still holds it."""
        return await self.store.finish_outbox(
            item_id,
            owner,
            now=now,
            status=status,
            next_attempt_at=next_attempt_at,
            error=error,
            card=card,
            events=events,
            count_attempt=count_attempt,
        )

    async def approval(self, approval_id: str) -> Approval | None:
        return await self.store.get_approval(approval_id)

    async def card(self, approval_id: str, address: str) -> Card | None:
        return await self.store.get_card(approval_id, address)

    async def events(self, approval_id: str) -> list[Event]:
        """The approval's events (the outbox finds the earlier post attempts in them)."""
        return await self.store.list_events(approval_id)

    async def mark(self, event: NewEvent) -> None:
        """A durable marker (`post_attempt`), written before the platform is called."""
        await self.store.append_events([event])

    async def rows(self, approval_id: str) -> list[OutboxItem]:
        return await self.store.list_outbox(approval_id)

    # ---------------------------------------------------------------- operators
    async def resend(self, cmd: ResendCard) -> None:
        """Queue the post again (API, CLI, web inbox); the outbox is woken."""
        authorize_repair(cmd.by, has_operators=self.has_operators)
        approval = await self.store.get_approval(cmd.approval_id)
        if approval is None:
            raise NotFound(f"approval {cmd.approval_id!r} not found")
        address = cmd.address
        if address not in approval.channels and address not in approval.policy.escalate_to:
            raise UnknownChannel(f"channel: {address!r} is not a channel of this approval", channel=address)
        now = self.clock.now()
        data = {"on_behalf_of": cmd.on_behalf_of} if cmd.on_behalf_of else {}
        event = NewEvent(cmd.approval_id, EventKind.POST_RESEND, now, cmd.by, address, data)
        if not await self.store.requeue_post(cmd.approval_id, address, now, [event]):
            card = await self.store.get_card(cmd.approval_id, address)
            state = "not posted yet" if card is None else card.status.value
            raise Conflict(f"the card on {address} is {state}: nothing to resend")
        self.observer.outbox_queued()
