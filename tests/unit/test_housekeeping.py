"""The housekeeper prunes old de-duplication marks in slices, and keeps what can still match."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from gateway.service.housekeeping import Pruning
from gateway.sla.housekeeping import INBOUND_KEEP, Housekeeper
from gateway.store.sqlite import SQLiteStore
from gateway.testing import FakeClock


async def test_old_marks_go_in_slices_recent_ones_stay(tmp_path: Path, clock: FakeClock) -> None:
    store = SQLiteStore(str(tmp_path / "h.db"))
    await store.open()
    try:
        for i in range(10):
            await store.remember_inbound(f"slack:interaction:{i}", clock.now())
        clock.advance(hours=47)
        await store.remember_inbound("slack:interaction:late", clock.now())
        keeper = Housekeeper(Pruning(store), clock, slice_rows=3)
        assert await keeper.run_once() == 0  # 47 h: Telegram may still redeliver (it keeps 24 h)
        clock.advance((INBOUND_KEEP - timedelta(hours=46)).total_seconds())  # the first ten are 49 h old
        assert await keeper.run_once() == 10  # slices of 3, 3, 3 and 1
        assert not await store.remember_inbound("slack:interaction:late", clock.now())
        assert await store.remember_inbound("slack:interaction:0", clock.now())
    finally:
        await store.close()
