"""Durable card deliveries: claim due outbox rows, send them through their channel, record.

The outbox owns a delivery end to end. A row is never dropped: transient errors retry (after the
server's delay when it gave one, else with backoff), terminal ones are recorded as `failed` with
an event visible in the API. Before each post it writes a durable `post_attempt` marker, so that
a post cut short (a crash, a read timeout) is known afterwards: the channel gets the earlier
attempts, and a post whose outcome nobody knows is recorded `uncertain` rather than sent again,
unless the channel can send it again without showing it twice (`Channel.resend_unknown`).
Every read and write goes through `gateway.service.deliveries.Deliveries`, which also holds an
operator's `ResendCard`. A delivery reads what it needs (approval, card, the events of a post) in
one snapshot, and the results (and post markers) of deliveries that finish together commit in one
transaction (`GroupCommit`), each before its delivery goes on.

Rows of kind `event` are outbound events to a webhook (gateway/delivery/events.py), not cards:
sent in order per approval and webhook (the claim holds an event back while an earlier one is
pending), retried after the receiver's `Retry-After` or with backoff capped at
`[events] max_backoff`, and given up `[events] give_up_after` after the event happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from gateway.core import loops, traces
from gateway.core.admission import Gate
from gateway.core.clock import Clock, parse_iso
from gateway.core.events import EventKind
from gateway.core.models import DeliveryStatus, Event, NewEvent, OutboxItem, OutboxKind
from gateway.core.observers import Observer, Observers
from gateway.core.retry import backoff
from gateway.core.shown import card_posted, card_synced
from gateway.core.traces import Span, Tracer
from gateway.core.webhooks import next_try, webhook_name
from gateway.delivery.channels import Attempt, Channel, DeliveryError, OutgoingCard, parse_address
from gateway.delivery.events import WebhookSender
from gateway.service.deliveries import ApprovalSnapshot, CardUpdate, Deliveries, ViewOf

log = logging.getLogger("gateway.outbox")
_RESOLVING = frozenset({EventKind.DELIVERY_RETRY, EventKind.DELIVERY_FAILED})


def earlier_attempts(events: Iterable[Event], address: str) -> list[Attempt]:
    """The tries at posting the card of `address` so far, oldest first (pure). A try is `unsent`
    once the channel answered it with a classified error (a later retry or failure of the post)
    that does not say the platform may have acted; one cut short by a crash, or by the outbox's
    own timeout, stays unknown. An operator's "post again" (`post_resend`) or a recorded post
    closes the list."""
    attempts: list[Attempt] = []
    for e in events:
        if e.channel != address:
            continue
        if e.kind == EventKind.POST_ATTEMPT:
            attempts.append(Attempt(e.at))
        elif e.kind in (EventKind.POST_RESEND, EventKind.CARD_POSTED):
            attempts = []
        elif attempts and e.kind in _RESOLVING and e.data.get("kind") == "post" and not e.data.get("uncertain"):
            attempts[-1] = Attempt(attempts[-1].at, unsent=True)
    return attempts


class OutboxRunner:
    def __init__(
        self,
        deliveries: Deliveries,
        channels: Mapping[str, Channel],
        clock: Clock,
        owner: str,
        *,
        lease: timedelta = timedelta(seconds=60),
        batch: int = 64,
        poll_interval: float = 1.0,
        observer: Observer | None = None,
        webhooks: WebhookSender | None = None,
        tracer: Tracer | None = None,
        gate: Gate | None = None,
    ) -> None:
        self.deliveries, self.channels, self.clock, self.owner = deliveries, channels, clock, owner
        self.gate = gate  # new cards' posts wait (bounded) while decided approvals' jobs wait to launch
        self.lease, self.batch, self.poll_interval = lease, batch, poll_interval
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._posting: dict[str, asyncio.Semaphore] = {}  # per channel kind: its posts_in_flight
        self.observer: Observer = observer or Observers()  # told each recorded delivery (metrics)
        self.webhooks = webhooks  # sends the outbound events (`[[events.webhooks]]`)
        self.tracer = tracer or Tracer()  # a span per delivery, in its approval's trace

    def notify(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        """Stop claiming; the round in progress finishes the deliveries it started and hands
        back the rest of its batch (`_deliver_group`)."""
        self._stopping.set()
        self._wake.set()

    async def run_once(self) -> int:
        """Deliver what is due now; return how many rows were handled."""
        items = await self.deliveries.claim(self.clock.now(), self.owner, self.lease, self.batch)
        groups: dict[tuple[str, str], list[OutboxItem]] = defaultdict(list)
        for item in items:
            groups[(item.approval_id, item.channel)].append(item)
        hold = self.gate is not None and self.gate.backlog
        await asyncio.gather(
            *(
                self._after_jobs(g) if hold and g[0].kind is OutboxKind.POST else self._deliver_group(g)
                for g in groups.values()
            )
        )
        return len(items)

    async def _after_jobs(self, items: list[OutboxItem]) -> None:
        """A new card's post yields to the resume jobs waiting to launch, at most
        `[scheduler] admission_wait` (a quarter of the lease at most: it is claimed already);
        syncs, reminders and events go at once."""
        if self.gate is not None:
            await self.gate.wait()
        await self._deliver_group(items)

    async def drain(self, max_rounds: int = 100) -> int:
        """Run until nothing is due (for tests and `burst` use)."""
        return await loops.drain(self.run_once, max_rounds)

    async def run_forever(self) -> None:
        await loops.poll_forever(self.run_once, self._wake, self.poll_interval, log, self._stopping)

    async def _deliver_group(self, items: list[OutboxItem]) -> None:
        # Every row must be recorded well before its lease runs out: after that another replica
        # may claim it and deliver it a second time (a second card on a platform with no
        # idempotency key). A slow platform call is cut at half the lease and retried.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.lease.total_seconds() / 2
        for item in items:  # a card's post, syncs and reminders go in order
            left = deadline - loop.time()
            if left <= 0 or self._stopping.is_set():  # give it back now; it is claimed again at once
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
                    event=EventKind.DELIVERY_RETRY,
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
        event: EventKind | None = None,
        data: Mapping[str, object] | None = None,
        count_attempt: bool = True,
    ) -> None:
        now = self.clock.now()
        events = []
        if event:
            events.append(NewEvent(item.approval_id, event, now, channel=item.channel, data=dict(data or {})))
            if status is DeliveryStatus.DONE:  # in the audit trail; at INFO only what went wrong
                log.debug("approval %s %s on %s", item.approval_id, event, item.channel)
        await self.deliveries.finish(
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
            self.observer.delivered(item.channel, item.kind, event)

    async def _deliver(self, item: OutboxItem) -> None:
        if item.kind is OutboxKind.EVENT:
            await self._send_event(item)
            return
        # what it needs in one snapshot; each delivery its own, read in parallel (one read for
        # a whole batch, statement by statement, held every delivery back until it was done)
        (view,) = await self.deliveries.views([_view_of(item)])
        approval = view.approval
        kind, target = parse_address(item.channel)
        channel = self.channels.get(kind)
        if approval is None or channel is None:
            why = "approval not found" if approval is None else f"channel {kind!r} is not enabled"
            await self._finish(item, DeliveryStatus.FAILED, why, event=EventKind.DELIVERY_FAILED, data={"error": why})
            return
        # the channel's kind, never its target: a chat id or an address is personal data, not for a collector
        more: dict[str, str | int | bool] = {
            "hitl.channel": kind,
            "hitl.delivery": item.kind.value,
            "hitl.attempt": item.attempts + 1,
        }
        attrs = traces.approval_attributes(approval.id, approval.run_id, approval.step, approval.agent, **more)
        with self.tracer.span(traces.CARD, approval.trace, attrs) as span:
            await self._send(item, view, channel, target, span)

    async def _send(self, item: OutboxItem, view: ApprovalSnapshot, channel: Channel, target: str, span: Span) -> None:
        now: datetime = self.clock.now()
        approval, card = view.approval, view.card
        assert approval is not None
        outgoing = OutgoingCard(item.channel, target, approval, now, card.ref if card else None, item.data)
        try:
            if item.kind is OutboxKind.POST:
                if card is not None and card.status is DeliveryStatus.DONE:
                    await self._finish(item, DeliveryStatus.DONE, count_attempt=False)
                    return
                await self._post(item, channel, outgoing, view.events or [])
            elif item.kind is OutboxKind.SYNC:
                if outgoing.ref is None:
                    await self._sync_without_card(item)
                    return
                await channel.update_card(outgoing)
                update = CardUpdate(item.channel, None, DeliveryStatus.DONE)
                data = card_synced(approval)
                await self._finish(item, DeliveryStatus.DONE, card=update, event=EventKind.CARD_SYNCED, data=data)
            else:
                await channel.send_reminder(outgoing)
                await self._finish(item, DeliveryStatus.DONE, event=EventKind.REMINDER_SENT, data=dict(item.data))
        except DeliveryError as exc:
            # not the error's text: a platform's refusal may name the target (an address)
            span.failed("delivery failed (transient)" if exc.transient else "delivery failed")
            await self._failed(item, exc)

    async def _post(self, item: OutboxItem, channel: Channel, card: OutgoingCard, events: list[Event]) -> None:
        """Mark, then post. Only `posts_in_flight` posts of a channel hold a marker at a time, so
        that a marked post goes out at once instead of queueing for a connection (a crash there
        would leave a card never sent looking `uncertain`). `events`: the approval's, read with
        it (the earlier attempts are among them)."""
        attempts = earlier_attempts(events, item.channel)
        unknown = [a for a in attempts if not a.unsent]
        if unknown and not getattr(channel, "resend_unknown", False):  # default: never twice
            await self._failed(item, _unknown_outcome(channel.kind, unknown[-1]))
            return
        if unknown:
            log.warning("%s: posting the card of %s again after an unanswered attempt", channel.kind, item.approval_id)
        async with self._slots(channel):
            mark = NewEvent(item.approval_id, EventKind.POST_ATTEMPT, card.now, channel=item.channel)
            await self.deliveries.mark(mark)
            ref = await channel.post_card(card, attempts)
        update = CardUpdate(item.channel, ref, DeliveryStatus.DONE)
        data = card_posted(card.approval, ref)
        await self._finish(item, DeliveryStatus.DONE, card=update, event=EventKind.CARD_POSTED, data=data)

    async def _send_event(self, item: OutboxItem) -> None:
        """One try at an outbound event: acknowledged, retried, or given up (a `delivery_failed`
        event on the approval, and a count on the dashboard)."""
        name = webhook_name(item.channel)
        sender = self.webhooks
        if sender is None or name is None or not sender.knows(name):
            why = "the webhook is no longer configured"
            data = {"error": why, "kind": item.kind.value, "event_id": item.data.get("id")}
            await self._finish(item, DeliveryStatus.FAILED, why, event=EventKind.DELIVERY_FAILED, data=data)
            return
        sent = await sender.send(name, item.data)
        if sent.ok:
            await self._finish(item, DeliveryStatus.DONE)
            return
        now = self.clock.now()
        # the window runs from the event, or from an operator's "send again" of it once given up
        happened = item.resent_at or parse_iso(str(item.data.get("time") or now.isoformat()))
        settings = sender.events
        delay = next_try(
            item.attempts + 1,
            happened,
            now,
            max_backoff=settings.max_backoff,
            give_up_after=settings.give_up_after,
            server_delay=sent.retry_after,
        )
        error = (sent.error or "failed")[:500]
        if delay is None:
            log.error(
                "event %s to webhook %s given up after %d tries: %s",
                item.data.get("id"),
                name,
                item.attempts + 1,
                error,
            )
            data = {
                "error": error,
                "kind": item.kind.value,
                "event_id": item.data.get("id"),
                "type": item.data.get("type"),
            }
            await self._finish(item, DeliveryStatus.FAILED, error, event=EventKind.DELIVERY_FAILED, data=data)
            return
        log.warning("event %s to webhook %s failed (%s); retry in %.1fs", item.data.get("id"), name, error, delay)
        await self._finish(item, DeliveryStatus.PENDING, error, retry_in=delay)

    def _slots(self, channel: Channel) -> contextlib.AbstractAsyncContextManager[object]:
        limit = getattr(channel, "posts_in_flight", None)
        if not limit:
            return contextlib.nullcontext()
        if channel.kind not in self._posting:
            self._posting[channel.kind] = asyncio.Semaphore(limit)
        return self._posting[channel.kind]

    async def _sync_without_card(self, item: OutboxItem) -> None:
        """The card is not posted yet: wait for the post (it renders the latest state anyway),
        unless the post failed for good, in which case there is nothing to sync."""
        rows = await self.deliveries.rows(item.approval_id)
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
        if exc.uncertain:
            facts["uncertain"] = True
        if exc.uncertain and item.kind is OutboxKind.POST:
            log.error(
                "post of %s to %s may or may not have reached the chat; it is not sent again (%s)",
                item.approval_id,
                item.channel,
                error,
            )
            unknown = CardUpdate(item.channel, None, DeliveryStatus.UNCERTAIN, error)
            await self._finish(
                item, DeliveryStatus.UNCERTAIN, error, card=unknown, event=EventKind.DELIVERY_UNCERTAIN, data=facts
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
                event=EventKind.DELIVERY_RETRY,
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
        await self._finish(item, DeliveryStatus.FAILED, error, card=card, event=EventKind.DELIVERY_FAILED, data=facts)


def _view_of(item: OutboxItem) -> ViewOf:
    """What a delivery reads: the approval, the card, and for a post the events (its attempts)."""
    return ViewOf(item.approval_id, item.channel, events=item.kind is OutboxKind.POST)


def _unknown_outcome(kind: str, attempt: Attempt) -> DeliveryError:
    return DeliveryError(
        f"{kind}: the card may already be in the chat (a post at {attempt.at.isoformat()} had no recorded"
        " answer); not sent again. A press on it adopts it; `hitl-gateway cards resend` posts a new one",
        transient=False,
        uncertain=True,
    )
