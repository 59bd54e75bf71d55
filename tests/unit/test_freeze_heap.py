"""`serve` freezes the start-up heap so that full collections stay short under load."""

from __future__ import annotations

import gc

from gateway.cli.serve import freeze_heap


async def test_freeze_heap_moves_live_objects_out_of_the_collector() -> None:
    try:
        await freeze_heap(None)
        assert gc.get_freeze_count() > 1000
    finally:
        gc.unfreeze()
