"""Schema checks run in worker processes of their own, never on the event loop.

The schema is the agent's. gateway.core.schemas bounds a check (re2 patterns, a time budget that
every keyword looks at), but within its budget a check is CPU-bound Python. In a thread it would
share the GIL with the event loop: on a busy host, a check thread preempted while it holds the
GIL stalls every request, webhook and timer of the gateway (measured: /healthz at 0.9 s). In a
process of its own it competes only for a CPU, like any other process.

WORKERS processes, started on the first check (`spawn`: a fork of a process that runs threads
may inherit a held lock). A worker that dies (killed, out of memory) fails only the check it ran:
a 400 for that schema, and the next check gets a fresh pool. A worker exits when the gateway is
gone, also after a kill -9 that gave the pool no chance to stop it.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from gateway.core.errors import ValidationError
from gateway.core.schemas import outcome

log = logging.getLogger("gateway.checks")
T = TypeVar("T")
WORKERS = 2  # a flood of slow schemas waits for these two, and takes at most two CPUs

_pool: ProcessPoolExecutor | None = None


def _executor() -> ProcessPoolExecutor:
    global _pool
    if _pool is None:
        context = multiprocessing.get_context("spawn")
        _pool = ProcessPoolExecutor(WORKERS, mp_context=context, initializer=_follow, initargs=(os.getpid(),))
    return _pool


def _follow(parent: int) -> None:
    """In each worker: exit once `parent` (the gateway) is gone, instead of waiting forever for
    checks that will never come."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(0)

    threading.Thread(target=watch, name="hitl-parent-watch", daemon=True).start()


async def checked(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` (a module-level function of gateway.core: it is pickled by name) in a worker
    process; its ValidationError raised here, as if it ran in this process."""
    global _pool
    pool = _executor()
    try:
        ok, value = await asyncio.get_running_loop().run_in_executor(pool, outcome, fn, *args)
    except BrokenProcessPool:
        if _pool is pool:
            _pool = None  # the next check starts fresh workers
        log.warning("a schema check's worker process died; its check is refused")
        raise ValidationError("args_schema", "could not be checked: the check's worker process died") from None
    if not ok:
        field, problem = value
        raise ValidationError(field, problem)
    result: T = value
    return result


__all__ = ["WORKERS", "checked"]
