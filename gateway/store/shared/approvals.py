"""The approvals and events ports, written once over the named SQL (backend.py). Claims
(`claim_due`) are each backend's own."""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from gateway.core.clock import from_ts, to_ts
from gateway.core.delegation import DelegationEvent
from gateway.core.grants import Grant
from gateway.core.models import Approval, Event, NewEvent, NewOutbox, Status
from gateway.core.rules import CounterKey
from gateway.store.base import (
    ApprovalSnapshot,
    Build,
    Creation,
    DelegationUnavailable,
    GrantUnavailable,
    NewJob,
    SeenBefore,
    TransitionWrite,
    ViewOf,
)
from gateway.store.rows import approval_from_row, approval_values, card_from_row, event_from_row, policy_values
from gateway.store.shared.backend import Backend, Tx
from gateway.store.shared.delegations import delegation_event_values
from gateway.store.shared.grants import grant_values
from gateway.store.shared.rules import read_budgets
from gateway.store.shared.tx import encode_events
from gateway.store.sql import approvals_sql

__all__ = ["ApprovalsSQL", "EventsSQL"]


class ApprovalsSQL(Backend):
    async def create_approval(
        self,
        approval: Approval,
        events: Sequence[NewEvent],
        outbox: Sequence[NewOutbox],
        *,
        job: NewJob | None = None,
        grant: str | None = None,
    ) -> tuple[Approval, bool]:
        values = (*approval_values(approval), approval.namespace)  # encoded here, not inside the transaction
        encoded = encode_events(events)

        async def op(tx: Tx) -> tuple[Approval, bool]:
            return await self._insert(tx, approval, values, encoded, events, outbox, job, grant)

        stored, created = await self.transact(op)
        if created:
            self.committed(outbox=bool(outbox), jobs=job is not None, wake_at=to_ts(approval.wake_at))
        return stored, created

    async def create_counted(
        self, namespace: str, keys: Collection[CounterKey], now: datetime, build: Build
    ) -> tuple[Approval, bool]:
        """`create_approval` of what `build` makes of the budgets `keys` read in the same
        transaction, after the namespace's budget lock: two suspends of one agent cannot both
        read a budget before either counts in it."""
        Q = self.Q

        async def op(tx: Tx) -> tuple[Approval, bool, Creation]:
            await tx.fetch_one(Q.budget_lock, (namespace,))
            made = build(await read_budgets(tx, Q, self.dialect, namespace, keys, now))
            row_values = (*approval_values(made.approval), made.approval.namespace)
            encoded = encode_events(made.events)
            stored, created = await self._insert(
                tx, made.approval, row_values, encoded, made.events, made.outbox, made.job, made.grant
            )
            return stored, created, made

        stored, created, made = await self.transact(op)
        if created:
            self.committed(outbox=bool(made.outbox), jobs=made.job is not None, wake_at=to_ts(made.approval.wake_at))
        return stored, created

    async def _insert(
        self,
        tx: Tx,
        approval: Approval,
        values: tuple[Any, ...],
        encoded: Any,
        events: Sequence[NewEvent],
        outbox: Sequence[NewOutbox],
        job: NewJob | None,
        grant: str | None = None,
    ) -> tuple[Approval, bool]:
        # Insert first (one statement in the common case); read the winner only on a conflict.
        # A concurrent insert of the same key in the same namespace waits for the row, then
        # finds the winner's.
        if await tx.execute(self.Q.insert_approval, values) != 1:
            row = await tx.fetch_one(self.Q.approval_by_key, (approval.namespace, approval.idempotency_key))
            return approval_from_row(row), False
        if grant is not None and await tx.execute(self.Q.use_grant, (grant, to_ts(approval.created_at))) != 1:
            raise GrantUnavailable(grant)  # revoked or expired since it was read: roll it all back
        fresh = all(e.approval_id == approval.id for e in events)  # its own events: no head to read
        await tx.insert_events(encoded, fresh=fresh)
        now = time.time()
        await tx.insert_outbox(outbox, now)
        if job is not None:
            await tx.insert_jobs([job], now)
        return approval, True

    async def get_approval(self, approval_id: str) -> Approval | None:
        row = await self.fetch_one(self.Q.get_approval, (approval_id,))
        return approval_from_row(row) if row else None

    async def approval_views(self, wanted: Sequence[ViewOf]) -> list[ApprovalSnapshot]:
        Q = self.Q
        if len(wanted) == 1 and wanted[0].card is None and not wanted[0].events:
            return [ApprovalSnapshot(await self.get_approval(wanted[0].approval_id))]  # one statement: one snapshot

        async def view(tx: Tx, w: ViewOf) -> ApprovalSnapshot:
            row = await tx.fetch_one(Q.get_approval, (w.approval_id,))
            if row is None:
                return ApprovalSnapshot(None)
            card_row = None if w.card is None else await tx.fetch_one(Q.get_card, (w.approval_id, w.card))
            event_rows = await tx.fetch_all(Q.list_events, (w.approval_id,)) if w.events else None
            return ApprovalSnapshot(
                approval_from_row(row),
                card_from_row(card_row) if card_row else None,
                None if event_rows is None else [event_from_row(r) for r in event_rows],
            )

        async def op(tx: Tx) -> list[ApprovalSnapshot]:
            return [await view(tx, w) for w in wanted]

        return await self.read(op) if wanted else []

    async def list_approvals(
        self,
        *,
        status: Status | None = None,
        run_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
        agent: str | None = None,
    ) -> list[Approval]:
        sql, params = approvals_sql(self.dialect, status, run_id, None, "newest", offset=True, agent=agent)
        return [approval_from_row(r) for r in await self.fetch_all(sql, [*params, limit, offset])]

    async def list_approvals_by_age(
        self,
        *,
        status: Status | None = None,
        run_id: str | None = None,
        channel: str | None = None,
        limit: int = 100,
        search: str | None = None,
    ) -> list[Approval]:
        sql, params = approvals_sql(self.dialect, status, run_id, channel, "oldest", search=search)
        return [approval_from_row(r) for r in await self.fetch_all(sql, [*params, limit])]

    async def save_transition(
        self,
        approval: Approval,
        expected_version: int,
        events: Sequence[NewEvent],
        outbox: Sequence[NewOutbox] = (),
        job: NewJob | None = None,
        grant: Grant | None = None,
        delegation: DelegationEvent | None = None,
        marks: Sequence[str] = (),
    ) -> bool:
        Q = self.Q
        values = (*approval_values(approval)[1:], approval.id, expected_version)
        encoded = encode_events(events)

        async def op(tx: Tx) -> bool:
            if await tx.execute(Q.save_transition, values) != 1:
                return False
            if grant is not None:
                await tx.execute(Q.insert_grant, grant_values(grant))
            if delegation is not None:
                if await tx.execute(Q.use_delegation, (delegation.delegation_id, to_ts(delegation.at))) != 1:
                    raise DelegationUnavailable(delegation.delegation_id)  # revoked or ended: roll it all back
                await tx.execute(Q.insert_delegation_event, delegation_event_values(delegation))
            now = time.time()
            # the press's marks commit with its decision: a crash before this commit leaves the
            # delivery unseen, so its redelivery decides (and is answered) like the first
            if marks and not await tx.insert_marks(marks, now):
                raise SeenBefore(marks[0])  # another delivery of this press committed: roll it all back
            await tx.insert_events(encoded)
            await tx.insert_outbox(outbox, now)
            await tx.insert_jobs([job] if job is not None else [], now)
            return True

        if not await self.transact(op):
            return False
        self.committed(outbox=bool(outbox), jobs=job is not None, wake_at=to_ts(approval.wake_at))
        return True

    async def save_policy_transitions(self, writes: Sequence[TransitionWrite]) -> list[bool]:
        """The scheduler's batch: one transaction, each row its own CAS on version; only the
        winners write their events, deliveries and jobs."""
        if not writes:
            return []
        rows = [(*policy_values(w.approval), w.approval.id, w.expected_version) for w in writes]
        encoded = [encode_events(w.events) for w in writes]

        async def op(tx: Tx) -> list[bool]:
            won = await tx.save_policy_rows(rows)
            done = [(w, enc) for w, enc, ok in zip(writes, encoded, won, strict=True) if ok]
            now = time.time()
            await tx.insert_events([e for _, enc in done for e in enc])
            await tx.insert_outbox([o for w, _ in done for o in w.outbox], now)
            await tx.insert_jobs([w.job for w, _ in done if w.job is not None], now)
            return won

        won = await self.transact(op)
        done = [w for w, ok in zip(writes, won, strict=True) if ok]
        wake = min((w.approval.wake_at for w in done if w.approval.wake_at), default=None)
        self.committed(outbox=any(w.outbox for w in done), jobs=any(w.job for w in done), wake_at=to_ts(wake))
        return won

    async def due_approvals(self, now: datetime, limit: int) -> list[Approval]:
        return [approval_from_row(r) for r in await self.fetch_all(self.Q.due_approvals, (to_ts(now), limit))]

    async def next_wake_at(self) -> datetime | None:
        row = await self.fetch_one(self.Q.next_wake_at)
        return from_ts(row[0]) if row else None

    async def count_by_status(self) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in await self.fetch_all(self.Q.count_by_status)}


class EventsSQL(Backend):
    async def append_events(self, events: Sequence[NewEvent]) -> None:
        encoded = encode_events(events)

        async def op(tx: Tx) -> None:
            await tx.insert_events(encoded)

        await self.transact(op)

    async def list_events(self, approval_id: str) -> list[Event]:
        return [event_from_row(r) for r in await self.fetch_all(self.Q.list_events, (approval_id,))]

    async def last_event_id(self) -> int:
        row = await self.fetch_one(self.Q.last_event_id)
        return int(row[0]) if row else 0
