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
from gateway.core.models import DeliveryStatus, NewEvent, OutboxItem
from gateway.core.observers import Observer
from gateway.service.groupcommit import GroupCommit
from gateway.service.operators import authorize_repair
from gateway.store import ApprovalSnapshot, CardUpdate, OutboxResult, Store, ViewOf

__all__ = ["ApprovalSnapshot", "CardUpdate", "Deliveries", "ResendCard", "ViewOf"]


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
        # the results and the post markers of deliveries that finish together: one transaction
        self._results = GroupCommit(self._finish)
        self._marks = GroupCommit(self._append)

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
        """Record a row's outcome (and its card, and its events) if `owner` still holds it;
        committed with the others that finish meanwhile (one transaction), before it returns."""
        result = OutboxResult(item_id, owner, now, status, next_attempt_at, error, card, events, count_attempt)
        return await self._results.submit(result)

    async def views(self, wanted: Sequence[ViewOf]) -> list[ApprovalSnapshot]:
        """The approvals of deliveries with their cards (and events, for a post), one snapshot."""
        return await self.store.approval_views(wanted)

    async def mark(self, event: NewEvent) -> None:
        """A durable marker (`post_attempt`), committed before it returns (and so before the
        platform is called), with the markers of the other posts made meanwhile."""
        await self._marks.submit(event)

    async def _finish(self, results: Sequence[OutboxResult]) -> list[bool]:
        return await self.store.finish_outboxes(results)

    async def _append(self, events: Sequence[NewEvent]) -> list[None]:
        await self.store.append_events(events)
        return [None] * len(events)

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
