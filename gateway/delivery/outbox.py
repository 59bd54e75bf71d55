"""Durable card deliveries: claim due outbox rows, send them through their channel, record.

A row is never dropped: transient errors retry (after the server's delay when it gave one,
else with backoff), terminal ones are recorded as `failed` with an event visible in the API.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

from gateway.core import loops
from gateway.core.clock import Clock
from gateway.core.errors import Conflict, NotFound, UnknownChannel
from gateway.core.models import DeliveryStatus, NewEvent, OutboxItem, OutboxKind
from gateway.core.retry import backoff
from gateway.delivery.channels import Channel, DeliveryError, parse_address
from gateway.store import CardUpdate, Store

log = logging.getLogger("gateway.outbox")
# Channels with no idempotency key write ATTEMPT_EVENT before each post (adapters/*/once.py);
# RESEND_EVENT is an operator's "send again", which such a channel honours.
ATTEMPT_EVENT = "post_attempt"
RESEND_EVENT = "post_resend"


async def resend_card(
    store: Store, approval_id: str, address: str, by: str, now: datetime, *, on_behalf_of: str | None = None
) -> None:
    """An operator's decision to post a card again whose post failed for good or is `uncertain`
    (it may be in the chat already: a second card is then possible, which the operator accepts)."""
    approval = await store.get_approval(approval_id)
    if approval is None:
        raise NotFound(f"approval {approval_id!r} not found")
    if address not in approval.channels and address not in approval.policy.escalate_to:
        raise UnknownChannel(f"channel: {address!r} is not a channel of this approval", channel=address)
    event = NewEvent(
        approval_id, RESEND_EVENT, now, by, address, {"on_behalf_of": on_behalf_of} if on_behalf_of else {}
    )
    if not await store.requeue_post(approval_id, address, now, [event]):
        card = await store.get_card(approval_id, address)
        state = "not posted yet" if card is None else card.status.value
        raise Conflict(f"the card on {address} is {state}: nothing to resend")


class OutboxRunner:
    def __init__(
        self,
        store: Store,
        channels: Mapping[str, Channel],
        clock: Clock,
        owner: str,
        *,
        lease: timedelta = timedelta(seconds=60),
        batch: int = 64,
        poll_interval: float = 1.0,
    ) -> None:
        self.store, self.channels, self.clock, self.owner = store, channels, clock, owner
        self.lease, self.batch, self.poll_interval = lease, batch, poll_interval
        self._wake = asyncio.Event()
        # Observers (metrics): called with the row and its result event after each recorded delivery.
        self.listeners: list[Callable[[OutboxItem, str], None]] = []

    def notify(self) -> None:
        self._wake.set()

    async def run_once(self) -> int:
        """Deliver what is due now; return how many rows were handled."""
        items = await self.store.claim_outbox(self.clock.now(), self.owner, self.lease, self.batch)
        groups: dict[tuple[str, str], list[OutboxItem]] = defaultdict(list)
        for item in items:
            groups[(item.approval_id, item.channel)].append(item)
        await asyncio.gather(*(self._deliver_group(g) for g in groups.values()))
        return len(items)

    async def drain(self, max_rounds: int = 100) -> int:
        """Run until nothing is due (for tests and `burst` use)."""
        return await loops.drain(self.run_once, max_rounds)

    async def run_forever(self) -> None:
        await loops.poll_forever(self.run_once, self._wake, self.poll_interval, log)

    async def _deliver_group(self, items: list[OutboxItem]) -> None:
        # Every row must be recorded well before its lease runs out: after that another replica
        # may claim it and deliver it a second time (a second card on a platform with no
        # idempotency key). A slow platform call is cut at half the lease and retried.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.lease.total_seconds() / 2
        for item in items:  # a card's post, syncs and reminders go in order
            left = deadline - loop.time()
            if left <= 0:  # give it back now; it is claimed again at once
                await self._finish(item, DeliveryStatus.PENDING, retry_in=0, count_attempt=False)
                continue
            try:
                async with asyncio.timeout(left):
                    await self._deliver(item)
            except TimeoutError:
                log.warning(
                    "outbox row %s (%s to %s) took longer than half its lease; retrying",
                    item.id,
                    item.kind.value,
                    item.channel,
                )
                delay = backoff(item.attempts + 1)
                await self._finish(
                    item,
                    DeliveryStatus.PENDING,
                    "delivery timed out",
                    retry_in=delay,
                    event="delivery_retry",
                    data={"error": "timed out", "retry_in": round(delay, 3)},
                )
            except Exception:
                log.exception("outbox row %s crashed; it will be retried", item.id)
                await self._finish(item, DeliveryStatus.PENDING, "internal error", retry_in=backoff(item.attempts + 1))

    async def _finish(
        self,
        item: OutboxItem,
        status: DeliveryStatus,
        error: str | None = None,
        *,
        retry_in: float | None = None,
        card: CardUpdate | None = None,
        event: str | None = None,
        data: dict[str, object] | None = None,
        count_attempt: bool = True,
    ) -> None:
        now = self.clock.now()
        events = []
        if event:
            events.append(NewEvent(item.approval_id, event, now, channel=item.channel, data=dict(data or {})))
            if status is DeliveryStatus.DONE:
                log.info("approval %s %s on %s", item.approval_id, event, item.channel)
        await self.store.finish_outbox(
            item.id,
            self.owner,
            now=now,
            status=status,
            next_attempt_at=None if retry_in is None else now + timedelta(seconds=retry_in),
            error=error,
            card=card,
            events=events,
            count_attempt=count_attempt,
        )
        if event:
            for listener in self.listeners:
                listener(item, event)

    async def _deliver(self, item: OutboxItem) -> None:
        approval = await self.store.get_approval(item.approval_id)
        kind, target = parse_address(item.channel)
        channel = self.channels.get(kind)
        if approval is None or channel is None:
            why = "approval not found" if approval is None else f"channel {kind!r} is not enabled"
            await self._finish(item, DeliveryStatus.FAILED, why, event="delivery_failed", data={"error": why})
            return
        now: datetime = self.clock.now()
        card = await self.store.get_card(item.approval_id, item.channel)
        try:
            if item.kind is OutboxKind.POST:
                if card is not None and card.status is DeliveryStatus.DONE:
                    await self._finish(item, DeliveryStatus.DONE, count_attempt=False)
                    return
                ref = await channel.post_card(target, approval, now)
                update = CardUpdate(item.channel, ref, DeliveryStatus.DONE)
                await self._finish(item, DeliveryStatus.DONE, card=update, event="card_posted", data={"ref": ref})
            elif item.kind is OutboxKind.SYNC:
                if card is None or card.ref is None:
                    await self._sync_without_card(item)
                    return
                await channel.update_card(target, card.ref, approval, now)
                update = CardUpdate(item.channel, None, DeliveryStatus.DONE)
                await self._finish(
                    item,
                    DeliveryStatus.DONE,
                    card=update,
                    event="card_synced",
                    data={"status": approval.status.value},
                )
            else:
                await channel.send_reminder(target, card.ref if card else None, approval, now)
                await self._finish(item, DeliveryStatus.DONE, event="reminder_sent", data=dict(item.data))
        except DeliveryError as exc:
            await self._failed(item, exc)

    async def _sync_without_card(self, item: OutboxItem) -> None:
        """The card is not posted yet: wait for the post (it renders the latest state anyway),
        unless the post failed for good, in which case there is nothing to sync."""
        rows = await self.store.list_outbox(item.approval_id)
        post_pending = any(
            r.kind is OutboxKind.POST and r.channel == item.channel and r.status is DeliveryStatus.PENDING for r in rows
        )
        if post_pending:
            await self._finish(item, DeliveryStatus.PENDING, retry_in=0.5, count_attempt=False)
        else:
            await self._finish(item, DeliveryStatus.DONE, "no card to sync", count_attempt=False)

    async def _failed(self, item: OutboxItem, exc: DeliveryError) -> None:
        error = str(exc)[:500]
        # `kind` and `unsent` let a channel tell a post that certainly did not reach the platform
        # (safe to send again) from one that may have (see DeliveryError).
        facts: dict[str, object] = {"error": error, "kind": item.kind.value, "unsent": exc.unsent}
        if exc.uncertain and item.kind is OutboxKind.POST:
            log.error(
                "post of %s to %s may or may not have reached the chat; it is not sent again (%s)",
                item.approval_id,
                item.channel,
                error,
            )
            unknown = CardUpdate(item.channel, None, DeliveryStatus.UNCERTAIN, error)
            await self._finish(
                item, DeliveryStatus.UNCERTAIN, error, card=unknown, event="delivery_uncertain", data=facts
            )
            return
        if exc.transient:
            delay = exc.retry_after if exc.retry_after is not None else backoff(item.attempts + 1)
            log.warning(
                "delivery %s of %s to %s failed (%s); retry in %.1fs",
                item.kind.value,
                item.approval_id,
                item.channel,
                error,
                delay,
            )
            await self._finish(
                item,
                DeliveryStatus.PENDING,
                error,
                retry_in=delay,
                event="delivery_retry",
                data={**facts, "retry_in": round(delay, 3), "attempt": item.attempts + 1},
            )
            return
        log.error(
            "delivery %s of %s to %s failed for good: %s",
            item.kind.value,
            item.approval_id,
            item.channel,
            error,
        )
        card = CardUpdate(item.channel, None, DeliveryStatus.FAILED, error) if item.kind is OutboxKind.POST else None
        await self._finish(item, DeliveryStatus.FAILED, error, card=card, event="delivery_failed", data=facts)
