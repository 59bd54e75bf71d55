"""Housekeeping: the tables that only grow are pruned in the background.

The channels remember every inbound delivery (an update, a callback, an interaction) to drop
redeliveries (`inbound`, `Inbound.first_time`). The chat platforms built in redeliver for at most
24 hours, so a mark older than `INBOUND_KEEP` can never match again. Reason prompts that expired
unanswered go too. With `[retention] raw_after`, the sealed raw args and state of approvals
decided (and resumed) longer ago are dropped (`gateway.service.housekeeping.Pruning`; docs/audit.md
says what is kept). Deletes run in slices, so that no write transaction holds the database for long.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from gateway.core import loops
from gateway.core.clock import Clock
from gateway.service.housekeeping import Pruning

log = logging.getLogger("gateway.housekeeping")
INBOUND_KEEP = timedelta(hours=48)
SLICE = 5000


class Housekeeper:
    def __init__(
        self,
        pruning: Pruning,
        clock: Clock,
        *,
        interval: float = 600.0,
        slice_rows: int = SLICE,
        raw_after: timedelta | None = None,
    ) -> None:
        self.pruning, self.clock, self.interval, self.slice_rows = pruning, clock, interval, slice_rows
        self.raw_after = raw_after

    async def run_once(self) -> int:
        """Prune until a slice comes back short; return the rows deleted."""
        total = 0
        while True:
            now = self.clock.now()
            n = await self.pruning.prune(now, now - INBOUND_KEEP, self.slice_rows)
            total += n
            if n < self.slice_rows:
                break
            await asyncio.sleep(0)  # let requests in between slices
        if total:
            log.info("housekeeping: pruned %d old de-duplication marks and expired prompts", total)
        return total + await self.prune_raw()

    async def prune_raw(self) -> int:
        """Retention: drop sealed raw args/state older than `raw_after`, a slice at a time."""
        if self.raw_after is None:
            return 0
        total = 0
        while True:
            n = await self.pruning.prune_raw(self.clock.now() - self.raw_after, self.slice_rows)
            total += n
            if n < self.slice_rows:
                break
            await asyncio.sleep(0)
        if total:
            log.info("retention: dropped the raw args and state of %d decided approvals", total)
        return total

    async def run_forever(self) -> None:
        await loops.poll_forever(self.run_once, asyncio.Event(), self.interval, log)  # nothing wakes it early
