"""Runtime.start moves the start-up heap out of the cyclic GC's reach, once per process."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from gateway import runtime
from gateway.runtime import Runtime
from gateway.testing import make_settings


class _Cycle:
    def __init__(self) -> None:
        self.me = self


async def _start_and_stop(db: Path) -> None:
    rt = Runtime(make_settings(f"sqlite:///{db}"))
    await rt.start(background=False)
    await rt.stop()


async def test_the_first_start_freezes_the_startup_heap_and_later_ones_do_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runtime, "_startup_frozen", False)  # as in a fresh process, whatever ran before
    gc.unfreeze()
    try:
        await _start_and_stop(tmp_path / "a.db")
        assert gc.get_freeze_count() > 0
        cycle = _Cycle()
        ref = weakref.ref(cycle)
        await _start_and_stop(tmp_path / "b.db")  # does not freeze again: the cycle stays collectable
        del cycle
        gc.collect()
        assert ref() is None
    finally:
        gc.unfreeze()
