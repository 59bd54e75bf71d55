"""SLA timers: what the scheduler (gateway/sla/scheduler.py) reads and applies.

Each due approval is claimed with a lease (a racing replica skips it) and applied through
`Service.apply_due_many`, a compare-and-set that releases the lease.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from gateway.core.models import Approval
from gateway.service.approvals import Service
from gateway.store import Store

__all__ = ["Timers"]


class Timers:
    def __init__(self, store: Store, service: Service) -> None:
        self.store, self.service = store, service

    async def claim_due(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[Approval]:
        """Up to `limit` approvals whose reminder, escalation or deadline is due at `now`."""
        return await self.store.claim_due(now, owner, lease, limit)

    async def next_wake(self) -> datetime | None:
        """The earliest wake-up the database holds (an index probe)."""
        return await self.store.next_wake_at()

    async def apply_due_many(self, approvals: Sequence[Approval], now: datetime) -> list[str | None]:
        """The event applied to each (`timed_out`, `escalated`, `reminded`), None where another
        writer got there first."""
        return await self.service.apply_due_many(approvals, now)
