"""The deliveries (outbox and cards) and resume-jobs ports, written once over the named SQL
(backend.py). Claims are each backend's own."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime

from gateway.core.clock import from_ts, to_ts
from gateway.core.events import EventKind
from gateway.core.models import (
    Card,
    ClaimedJob,
    DeliveryStatus,
    JobStatus,
    NewEvent,
    NewOutbox,
    OutboxItem,
    ResumeJob,
)
from gateway.core.webhooks import Backlog, webhook_name
from gateway.store.base import CardUpdate, OutboxResult
from gateway.store.rows import approval_from_row, card_from_row, job_from_row, outbox_from_row, step_from_row
from gateway.store.shared.backend import Backend, Tx
from gateway.store.shared.tx import encode_events
from gateway.store.sql import Queries

__all__ = ["DeliveriesSQL", "JobsSQL"]


class DeliveriesSQL(Backend):
    async def enqueue_outbox(self, items: Sequence[NewOutbox], now: datetime) -> None:
        t = to_ts(now) or time.time()

        async def op(tx: Tx) -> None:
            await tx.insert_outbox(items, t)

        await self.transact(op)
        self.committed(outbox=bool(items))

    async def finish_outbox(
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
        result = OutboxResult(item_id, owner, now, status, next_attempt_at, error, card, events, count_attempt)
        return (await self.finish_outboxes([result]))[0]

    async def finish_outboxes(self, results: Sequence[OutboxResult]) -> list[bool]:
        Q = self.Q
        encoded = [encode_events(r.events) for r in results]  # before the transaction: it holds the chain heads

        async def finish(tx: Tx, r: OutboxResult) -> tuple[bool, bool]:
            """Whether the result was recorded, and whether its card changed (a post's answer for
            the message a press adopted meanwhile does not: the card is the press's)."""
            t = to_ts(r.now)
            values = (r.status.value, int(r.count_attempt), to_ts(r.next_attempt_at), r.error, t, r.item_id, r.owner)
            if r.card is None:
                return await tx.execute(Q.finish_outbox, values) == 1, True
            if (row := await tx.written(Q.finish_outbox, values, Q.outbox_approval, (r.item_id,))) is None:
                return False, True
            return True, await tx.upsert_card(row[0], r.card, t)

        async def op(tx: Tx) -> list[bool]:
            done = [await finish(tx, r) for r in results]
            # the events of those recorded, their chains extended at once; an adopted card's
            # `card_posted` is left out: its `card_adopted` recorded that message already
            kept = [
                e
                for (ok, changed), enc in zip(done, encoded, strict=True)
                if ok
                for e in enc
                if changed or e.kind != EventKind.CARD_POSTED
            ]
            await tx.insert_events(kept)
            return [ok for ok, _ in done]

        return await self.transact(op) if results else []

    async def list_outbox(self, approval_id: str) -> list[OutboxItem]:
        return [outbox_from_row(r) for r in await self.fetch_all(self.Q.list_outbox, (approval_id,))]

    async def webhook_backlog(self) -> list[Backlog]:
        counts: dict[str, dict[str, int]] = {}
        for channel, status, n, tried in await self.fetch_all(self.Q.webhook_backlog, ()):
            c = counts.setdefault(channel, {"pending": 0, "failing": 0, "given_up": 0})
            if status == DeliveryStatus.FAILED.value:
                c["given_up"] += int(n)
            else:
                c["failing"] += int(tried or 0)
                c["pending"] += int(n) - int(tried or 0)
        errors: dict[str, tuple[str, float]] = {}
        for channel, error, at in await self.fetch_all(self.Q.webhook_last_error, ()):
            errors.setdefault(channel, (error, at))
        out = []
        for channel in sorted(counts):
            error, at = errors.get(channel, (None, None))
            out.append(
                Backlog(
                    webhook_name(channel) or channel, **counts[channel], last_error=error, last_error_at=from_ts(at)
                )
            )
        return out

    async def get_card(self, approval_id: str, channel: str) -> Card | None:
        row = await self.fetch_one(self.Q.get_card, (approval_id, channel))
        return card_from_row(row) if row else None

    async def list_cards(self, approval_id: str) -> list[Card]:
        return [card_from_row(r) for r in await self.fetch_all(self.Q.list_cards, (approval_id,))]

    async def cards_needing_attention(self, limit: int = 50) -> list[Card]:
        return [card_from_row(r) for r in await self.fetch_all(self.Q.cards_needing_attention, (limit,))]

    async def requeue_post(self, approval_id: str, channel: str, now: datetime, events: Sequence[NewEvent]) -> bool:
        if not await self.changed(self.Q.requeue_post, (to_ts(now), approval_id, channel), events):
            return False
        self.committed(outbox=True)
        return True

    async def requeue_events(self, ids: Sequence[int], now: datetime, events: Sequence[NewEvent]) -> int:
        encoded, t = encode_events(events), to_ts(now)

        async def op(tx: Tx) -> int:
            n = 0
            for item_id in ids:  # a few rows: one approval's events
                n += await tx.execute(self.Q.requeue_event, (t, item_id))
            if n:
                await tx.insert_events(encoded)
            return n

        requeued = await self.transact(op) if ids else 0
        if requeued:
            self.committed(outbox=True)
        return requeued

    async def adopt_card(
        self, approval_id: str, channel: str, ref: str, now: datetime, events: Sequence[NewEvent] = ()
    ) -> bool:
        t = to_ts(now)
        return await self.changed(self.Q.adopt_card, (approval_id, channel, ref, t, t), events)

    async def move_card(
        self, approval_id: str, channel: str, old_ref: str, new_ref: str, now: datetime, events: Sequence[NewEvent] = ()
    ) -> bool:
        return await self.changed(self.Q.move_card, (new_ref, to_ts(now), approval_id, channel, old_ref), events)


class JobsSQL(Backend):
    async def finish_job(
        self,
        job_id: int,
        owner: str,
        *,
        claim: int,
        now: datetime,
        status: JobStatus,
        next_attempt_at: datetime | None = None,
        error: str | None = None,
        output_tail: str | None = None,
        events: Sequence[NewEvent] = (),
        outbox: Sequence[NewOutbox] = (),
    ) -> bool:
        values = (status.value, to_ts(next_attempt_at), error, output_tail, to_ts(now), job_id, owner, claim)
        encoded = encode_events(events)

        async def op(tx: Tx) -> bool:
            if await tx.execute(self.Q.finish_job, values) != 1:
                return False
            await tx.insert_events(encoded)
            await tx.insert_outbox(outbox, time.time())  # its outbound events, in the same commit
            return True

        if not await self.transact(op):
            return False
        self.committed(jobs=status is JobStatus.QUEUED, outbox=bool(outbox))
        return True

    async def extend_job_lease(self, job_id: int, owner: str, until: datetime, *, claim: int) -> bool:
        return await self.changed(self.Q.extend_job_lease, (to_ts(until), job_id, owner, claim))

    async def get_job(self, approval_id: str) -> ResumeJob | None:
        row = await self.fetch_one(self.Q.get_job, (approval_id,))
        return job_from_row(row) if row else None

    async def list_jobs(
        self, status: JobStatus | None = None, limit: int = 100, *, agent: str | None = None
    ) -> list[ResumeJob]:
        rows = await self.fetch_all(self.Q.list_jobs, (status.value if status else None, limit, agent))
        return [job_from_row(r) for r in rows]

    async def count_jobs_by_status(self) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in await self.fetch_all(self.Q.count_jobs_by_status)}

    async def requeue_job(self, approval_id: str, now: datetime, events: Sequence[NewEvent]) -> bool:
        if not await self.changed(self.Q.requeue_job, (to_ts(now), approval_id), events):
            return False
        self.committed(jobs=True)
        return True


async def launch_of(Q: Queries, tx: Tx, job: ResumeJob) -> ClaimedJob:
    """What `job` launches with, read through `tx` (the claim's): its approval and its run's journal."""
    row = await tx.fetch_one(Q.get_approval, (job.approval_id,))
    if row is None:
        return ClaimedJob(job, None, [])
    approval = approval_from_row(row)
    steps = await tx.fetch_all(Q.get_steps, (approval.run_id, approval.namespace))
    return ClaimedJob(job, approval, [step_from_row(r) for r in steps])
