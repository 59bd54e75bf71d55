"""The row writes several use cases share (events with their chain links, deliveries, jobs,
cards), written once over the few calls a driver makes its own way: `Tx`. sqlite/writes.py
and postgres/writes.py subclass it with their connection: one statement, many rows, the chain
heads, and what a write reads back.

Events are encoded before the transaction (`encode_events`, on the caller's side): inside it,
every writer waits for the one that holds the heads, so it only links them (`link_hash`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from gateway.core.audit import GENESIS, Leaf, event_tail, link_hash
from gateway.core.clock import to_ts
from gateway.core.events import EventKind
from gateway.core.models import DeliveryStatus, NewEvent, NewOutbox, ResumeJob
from gateway.store.base import CardUpdate, NewJob
from gateway.store.rows import Row, dumps
from gateway.store.sql import Queries

__all__ = ["EncodedEvent", "Heads", "Tx", "encode_events", "started_events"]

Heads = dict[str, tuple[int, str]]  # approval id -> (seq, hash) of its chain's last link
_START = (0, GENESIS)  # an approval with no chained event yet (none, or only events from before migration 13)


class EncodedEvent(NamedTuple):
    """A `NewEvent` as its row and its chain text (`event_tail`)."""

    approval_id: str
    kind: str
    at: float
    actor: str | None
    channel: str | None
    data: str
    tail: str


def encode_events(events: Sequence[NewEvent]) -> list[EncodedEvent]:
    out = []
    for e in events:
        at, data = e.at.timestamp(), dumps(e.data)  # to_ts, never None here
        tail = event_tail(e.approval_id, e.kind, e.actor, at, e.channel, data)
        out.append(EncodedEvent(e.approval_id, e.kind, at, e.actor, e.channel, data, tail))
    return out


def started_events(jobs: Sequence[ResumeJob], owner: str, now: datetime) -> list[EncodedEvent]:
    """The `job_started` event of each job a claim took (its attempt, by the claiming runner),
    written in the claim's own transaction: a claim that commits has its event, and an attempt
    costs no commit of its own to announce itself. Encoded inside the claim (which jobs it took
    is known only there), before any chain head is read or locked: one small event per job."""
    return encode_events(
        [NewEvent(j.approval_id, EventKind.JOB_STARTED, now, owner, data={"attempt": j.attempts}) for j in jobs]
    )


class Tx:
    """One transaction of a use case: every call runs in it, and it commits when the use case's
    function returns (or rolls back, whole, when it raises). What each driver does its own way
    raises NotImplementedError here."""

    __slots__ = ()
    Q: Queries

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; the number of rows it touched."""
        raise NotImplementedError

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        raise NotImplementedError

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        raise NotImplementedError

    async def fetch_in(self, sql: str, ids: Sequence[str]) -> list[Row]:
        """`sql` for these ids (SQLite: `{ids}`, an IN list, slice by slice; PostgreSQL: an array)."""
        raise NotImplementedError

    async def written(self, sql: str, params: Sequence[Any], read_back: str, key: Sequence[Any]) -> Row | None:
        """Run a write; the row it names (`read_back` with `key`), None if it touched no row.
        PostgreSQL's `sql` says RETURNING (one round trip); SQLite below 3.35 has none."""
        raise NotImplementedError

    async def insert_many(self, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
        """The one-row INSERT `sql` for each of `rows`, in order."""
        raise NotImplementedError

    async def insert_queued(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Deliveries to queue (`insert_queued` rows), one pending unclaimed sync per card."""
        raise NotImplementedError

    async def chain_heads(self, ids: list[str]) -> Heads:
        """The heads of these approvals' chains, which this transaction is about to extend."""
        raise NotImplementedError

    async def write_events(self, rows: list[tuple[Any, ...]], heads: Heads) -> None:
        """The linked events (`insert_event` rows), and `heads`, their chains' new heads."""
        raise NotImplementedError

    async def seal_heads(self) -> list[Leaf]:
        """Seal the heads moved since the last checkpoint (shared/audit.py); them, by approval id."""
        raise NotImplementedError

    async def save_policy_rows(self, rows: Sequence[tuple[Any, ...]]) -> list[bool]:
        """Each row (`policy_values`, id, expected version) one compare-and-set; which matched."""
        raise NotImplementedError

    async def insert_events(self, events: Sequence[EncodedEvent], *, fresh: bool = False) -> None:
        """The events with their chain links (gateway/core/audit.py). `fresh`: the events of
        approvals created in this transaction, which have no head to read or lock yet."""
        if not events:
            return
        heads = {} if fresh else await self.chain_heads(list({e.approval_id: None for e in events}))
        rows = []
        for e in events:
            seq, prev = heads.get(e.approval_id, _START)
            digest = link_hash(prev, seq + 1, e.tail)
            heads[e.approval_id] = (seq + 1, digest)
            rows.append((e.approval_id, e.kind, e.at, e.actor, e.channel, e.data, seq + 1, digest))
        await self.write_events(rows, heads)

    async def insert_outbox(self, items: Sequence[NewOutbox], now: float) -> None:
        queued: list[tuple[Any, ...]] = []  # a run of queued rows goes in together (a storm: 500 syncs)
        for item in items:
            if item.ref is None:
                queued.append((item.approval_id, item.channel, item.kind.value, now, dumps(item.data), now, now))
                continue
            if queued:  # keep the rows in order
                await self.insert_queued(queued)
                queued = []
            # posted in this commit: record it as the outbox would have
            await self.execute(self.Q.insert_posted, (item.approval_id, item.channel, now, dumps(item.data)))
            posted = CardUpdate(item.channel, item.ref, DeliveryStatus.DONE)
            await self.upsert_card(item.approval_id, posted, to_ts(item.posted_at) or now)
        if queued:
            await self.insert_queued(queued)

    async def insert_marks(self, keys: Sequence[str], now: float) -> bool:
        """The inbound de-duplication marks of one delivery: True if none was recorded before."""
        inserted = 0
        for key in keys:
            inserted += await self.execute(self.Q.remember_inbound, (key, now))
        return inserted == len(keys)

    async def insert_jobs(self, jobs: Sequence[NewJob], now: float) -> None:
        """Resume jobs of decided approvals (one per approval: a second is ignored)."""
        if jobs:
            await self.insert_many(self.Q.insert_job, [(job.approval_id, job.worker, now, now, now) for job in jobs])

    async def upsert_card(self, approval_id: str, card: CardUpdate, now: float | None) -> bool:
        """False when the card was recorded as it is already: a post's answer naming the message a
        press adopted first (the card is that press's: `card_adopted`)."""
        posted = now if card.status is DeliveryStatus.DONE else None
        values = (approval_id, card.channel, card.ref, card.status.value, card.error, posted, now)
        return await self.execute(self.Q.upsert_card, values) == 1
