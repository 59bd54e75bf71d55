"""Pruning what only grows: what the housekeeper (gateway/sla/housekeeping.py) deletes, a slice
at a time, so that no write transaction holds the database for long."""

from __future__ import annotations

from datetime import datetime

from gateway.store import Store

__all__ = ["Pruning"]


class Pruning:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def prune(self, now: datetime, inbound_before: datetime, limit: int) -> int:
        """Up to `limit` de-duplication marks older than `inbound_before` and prompts expired at
        `now`; return how many rows went."""
        return await self.store.prune(now, inbound_before, limit)

    async def prune_raw(self, before: datetime, limit: int) -> int:
        """Retention: up to `limit` decided approvals' sealed raw args and state, decided (and
        resumed) before `before`."""
        return await self.store.prune_raw(before.timestamp(), limit)
