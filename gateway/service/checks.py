"""Schema checks run in worker processes of their own, never on the event loop.

The schema is the agent's. gateway.core.schemas bounds a check (re2 patterns, a time budget that
the validator looks at between keywords and between searches, a cap on the regex work), but
within its budget a check is CPU-bound Python. In a thread it would share the GIL with the event
loop: on a busy host, a check thread preempted while it holds the GIL stalls every request,
webhook and timer of the gateway (measured: /healthz at 0.9 s). In a process of its own it
competes only for a CPU, like any other process.

WORKERS processes (`spawn`: a fork of a process that runs threads may inherit a held lock), each
started when first needed and talked to over a pipe of its own, so that this module always knows
which process runs which check:
- a check holds its worker at most HOLD (CHECK_BUDGET + MARGIN); past that the worker is killed
  (one C call, such as one re2 search, cannot be interrupted from inside) and the check is the
  budget's 400; a new worker starts in its place;
- a check waits for a free worker at most HOLD, in arrival order, then is a 400 saying the
  checkers are busy. So slow schemas delay another agent's check by at most HOLD, never more;
- a worker's start (imports, up to STARTUP) counts as no check's time;
- a worker that dies (killed, out of memory) fails only the check it ran, with a 400.
A worker exits when the gateway is gone, also after a kill -9 that gave it no chance to stop it.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar

from gateway.core.errors import ValidationError
from gateway.core.schemas import CHECK_BUDGET, FIELD, outcome

log = logging.getLogger("gateway.checks")
_running: set[asyncio.Task[Any]] = set()  # checks whose caller gave up, and workers starting: kept till done
T = TypeVar("T")
WORKERS = 2  # a flood of slow schemas waits for these two, and takes at most two CPUs
MARGIN = 2.0  # seconds past the budget before a worker is killed: pickling, a busy host
HOLD = CHECK_BUDGET + MARGIN  # the longest one check holds a worker, and so the longest wait for one
STARTUP = 30.0  # seconds a new worker may take to start (imports, on a loaded host); not a check's time


def _serve(conn: Connection, parent: int) -> None:
    """A worker: ready once imported, then (fn, args) in and `outcome(fn, *args)` out, until the
    pipe closes or the gateway (`parent`) is gone."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(0)

    threading.Thread(target=watch, name="hitl-parent-watch", daemon=True).start()
    conn.send(True)
    while True:
        try:
            fn, args = conn.recv()
        except EOFError:
            return
        try:
            conn.send(outcome(fn, *args))
        except Exception as exc:  # not the agent's error: raised again in the gateway, as before
            conn.send((None, exc))


class _Worker:
    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, theirs = context.Pipe()
        self.process: BaseProcess = context.Process(
            target=_serve, args=(theirs, os.getpid()), name="hitl-schema-check", daemon=True
        )
        self.process.start()
        theirs.close()

    @classmethod
    async def ready(cls) -> _Worker:
        """A started worker, once it can take a check (so its start is no check's time)."""
        worker = cls()
        try:
            await asyncio.wait_for(asyncio.to_thread(worker.conn.recv), STARTUP)
        except BaseException:
            worker.kill()
            raise
        return worker

    async def run(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool | None, Any]:
        # in a thread: a large send and the wait for the answer stay off the event loop
        return await asyncio.wait_for(asyncio.to_thread(self._call, fn, args), HOLD)

    def _call(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool | None, Any]:
        self.conn.send((fn, args))
        result: tuple[bool | None, Any] = self.conn.recv()
        return result

    def kill(self) -> None:
        # its pipe's other end closes with it: a thread still in _call ends with EOFError, and
        # the pipe is closed when that thread lets go of it (not here, under that thread)
        self.process.kill()
        self.process.join(1)


class _Workers:
    """At most WORKERS workers; a check takes a free one, or waits for one in arrival order."""

    def __init__(self) -> None:
        self.idle: list[_Worker] = []
        self.started = 0  # workers alive or starting
        self.waiters: deque[asyncio.Future[_Worker]] = deque()

    async def take(self) -> _Worker | None:
        """A free worker; None when none was free within HOLD."""
        if self.idle:
            return self.idle.pop()
        if self.started < WORKERS:
            return await self._start()
        waiter: asyncio.Future[_Worker] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        try:
            return await asyncio.wait_for(asyncio.shield(waiter), HOLD)
        except BaseException as exc:  # timed out or cancelled: a worker handed over meanwhile goes back
            if waiter.done() and not waiter.cancelled():
                self.give_back(waiter.result())
            waiter.cancel()
            if isinstance(exc, TimeoutError):
                return None
            raise

    async def _start(self) -> _Worker:
        self.started += 1
        try:
            return await _Worker.ready()
        except BaseException:
            self.started -= 1
            raise

    def give_back(self, worker: _Worker | None) -> None:
        """`worker` free again, or None: it was killed, and a new one starts for who waits."""
        if worker is None:
            self.started -= 1
            if self.waiters:
                refill = asyncio.ensure_future(self._refill())
                _running.add(refill)
                refill.add_done_callback(_forget)
            return
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done() and not waiter.get_loop().is_closed():
                waiter.set_result(worker)
                return
        self.idle.append(worker)

    async def _refill(self) -> None:
        if self.started >= WORKERS:  # a new check started one meanwhile: the waiter gets the next free
            return
        try:
            self.give_back(await self._start())
        except Exception:
            log.warning("a schema check worker could not start")


_workers = _Workers()


async def _on(worker: _Worker, fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool | None, Any]:
    """`fn(*args)` on `worker`, which is given back afterwards, or killed and replaced when the
    check ran past the budget or its process died."""
    try:
        result = await worker.run(fn, args)
    except BaseException:
        worker.kill()
        _workers.give_back(None)
        raise
    _workers.give_back(worker)
    return result


def _forget(task: asyncio.Task[Any]) -> None:
    _running.discard(task)
    if not task.cancelled():
        task.exception()  # seen: a check whose caller gave up logs no "exception never retrieved"


async def checked(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` (a module-level function of gateway.core: it is pickled by name) in a worker
    process; its ValidationError raised here, as if it ran in this process."""
    worker = await _workers.take()
    if worker is None:
        raise ValidationError(FIELD, f"could not be checked: every schema checker was busy for {HOLD:g} s; retry")
    # shielded: a caller that gives up (a client gone) neither kills a worker nor loses one
    task = asyncio.ensure_future(_on(worker, fn, args))
    _running.add(task)
    task.add_done_callback(_forget)
    try:
        ok, value = await asyncio.shield(task)
    except TimeoutError:
        log.warning("a schema check ran past its budget; its worker process is killed")
        raise ValidationError(FIELD, f"could not be checked within {CHECK_BUDGET:g} s") from None
    except (EOFError, OSError):
        log.warning("a schema check's worker process died; its check is refused")
        raise ValidationError(FIELD, "could not be checked: the check's worker process died") from None
    if ok is None:
        raise value
    if not ok:
        field, problem = value
        raise ValidationError(field, problem)
    result: T = value
    return result


__all__ = ["HOLD", "MARGIN", "WORKERS", "checked"]
