"""The two ways every background runner (outbox, resume jobs) is driven: drain for tests and
bursts, or poll forever, woken early by an in-process notification."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

RunOnce = Callable[[], Awaitable[int]]


async def drain(run_once: RunOnce, max_rounds: int = 100) -> int:
    """Run rounds until one handles nothing; return the total handled."""
    total = 0
    for _ in range(max_rounds):
        n = await run_once()
        total += n
        if n == 0:
            break
    return total


async def poll_forever(
    run_once: RunOnce, wake: asyncio.Event, interval: float, log: logging.Logger, stop: asyncio.Event | None = None
) -> None:
    """Run rounds; when a round finds nothing, sleep until `wake` is set or `interval` passes.
    Returns once `stop` is set (after the round in progress): a stopping gateway claims no more."""
    stop = stop or asyncio.Event()
    while not stop.is_set():
        try:
            n = await run_once()
        except Exception:
            log.exception("%s round failed", log.name)
            n = 0
        if n == 0 and not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), interval)
            wake.clear()
