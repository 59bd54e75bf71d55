"""Housekeeping: the tables that only grow are pruned in the background.

The channels remember every inbound delivery (an update, a callback, an interaction) to drop
redeliveries (`inbound`, `Inbound.first_time`). The chat platforms built in redeliver for at most
24 hours, so a mark older than `INBOUND_KEEP` can never match again. Reason prompts that expired
unanswered go too. Deletes run in slices, so that no write transaction
holds the database for long.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from gateway.core import loops
from gateway.core.clock import Clock
from gateway.store import Store

log = logging.getLogger("gateway.housekeeping")
INBOUND_KEEP = timedelta(hours=48)
SLICE = 5000


class Housekeeper:
    def __init__(self, store: Store, clock: Clock, *, interval: float = 600.0, slice_rows: int = SLICE) -> None:
        self.store, self.clock, self.interval, self.slice_rows = store, clock, interval, slice_rows

    async def run_once(self) -> int:
        """Prune until a slice comes back short; return the rows deleted."""
        total = 0
        while True:
            now = self.clock.now()
            n = await self.store.prune(now, now - INBOUND_KEEP, self.slice_rows)
            total += n
            if n < self.slice_rows:
                break
            await asyncio.sleep(0)  # let requests in between slices
        if total:
            log.info("housekeeping: pruned %d old de-duplication marks and expired prompts", total)
        return total

    async def run_forever(self) -> None:
        await loops.poll_forever(self.run_once, asyncio.Event(), self.interval, log)  # nothing wakes it early
