"""Decided approvals first: while resume jobs wait to launch, new work waits, a bounded time.

Under load a decided approval's resume job competes for the one event loop (and the store's
writer) with new suspends, new card posts and the other runs' journal calls; queued behind them,
its step started about half a second after the decision at 64 concurrent cycles, against a few
milliseconds alone. The worker tells the `Admission` its backlog: the jobs a commit queued that
no claim has taken yet, and the jobs it claimed that are not launched yet (an entrypoint pool's
process has not taken them). While there is a backlog, a suspend waits before it is admitted and
the outbox holds back the posts of new cards (a decided card's sync still goes), each at most
`[scheduler] admission_wait`: nothing starves, and a worker kept busy by long jobs costs a
suspend at most that bound. With no backlog the check is one attribute read.

The backlog is this process's own: on PostgreSQL each replica holds back its own suspends for
the jobs its own worker claimed (or was woken for).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from datetime import datetime

from gateway.core.clock import Clock


class Admission:
    """The backlog and the decision to hold (pure: the caller passes `now`)."""

    def __init__(self, bound: float) -> None:
        self.bound = bound  # seconds; 0: never hold
        self.due = False  # a commit queued jobs that no claim has taken yet
        self.unlaunched: set[str] = set()  # the approvals whose jobs were claimed here, not launched yet

    @property
    def backlog(self) -> bool:
        return self.due or bool(self.unlaunched)

    def hold(self, since: datetime, now: datetime) -> float:
        """Seconds that work which arrived at `since` still waits at `now` (0: it goes)."""
        if self.bound <= 0 or not self.backlog:
            return 0.0
        return self.left((now - since).total_seconds())

    def left(self, waited: float) -> float:
        """Seconds that work which has waited `waited` seconds still waits (0: it goes)."""
        if self.bound <= 0 or not self.backlog:
            return 0.0
        return max(0.0, self.bound - waited)


class Gate:
    """The `Admission` the worker updates, and the waits of the suspends and new card posts.

    A waiter sleeps until the backlog clears or its bound passes, measured on the event loop's
    monotonic time (or the clock's, when that has moved further: a clock moved by hand).
    `held` is told the seconds each held suspend waited (the metric)."""

    def __init__(self, clock: Clock, bound: float, held: Callable[[float], None] | None = None) -> None:
        self.clock = clock
        self.state = Admission(bound)
        self._held = held
        self._waiters = 0
        self._changed = asyncio.Event()

    @property
    def backlog(self) -> bool:
        return self.state.backlog

    # ---------------------------------------------------------------- what the worker tells
    def queued(self) -> None:
        """A commit queued resume jobs (here, or on another replica)."""
        self.state.due = True
        self._pulse()

    def claimed(self, approvals: Iterable[str], *, more: bool) -> None:
        """A claim took the jobs of `approvals` (those that queue before they launch); `more`:
        it took as many as it asked for, so more may be due."""
        self.state.unlaunched.update(approvals)
        self.state.due = more
        self._pulse()

    def full(self) -> None:
        """The worker has no free slot: the jobs still due wait for one, not for a claim, so
        new work does not wait for them (it would only pay the whole bound)."""
        if self.state.due:
            self.state.due = False
            self._pulse()

    def launched(self, approval_id: str) -> None:
        """The approval's job left the queue: its worker runs it (or it ended without a launch)."""
        self.state.unlaunched.discard(approval_id)
        self._pulse()

    def clear(self) -> None:
        """The worker stopped: nothing it holds is launched by it any more."""
        self.state.due = False
        self.state.unlaunched.clear()
        self._pulse()

    def recheck(self) -> None:
        """Wake the waiters to read the clock again (a clock moved by hand: tests)."""
        self._wake_all()

    def _pulse(self) -> None:
        # Only a backlog that cleared releases a waiter (its own timeout handles the bound):
        # waking every waiter at each claim and launch cost more CPU than it saved.
        if self._waiters and not self.state.backlog:
            self._wake_all()

    def _wake_all(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    # ---------------------------------------------------------------- waits
    async def wait(self) -> float | None:
        """Wait while there is a backlog, at most the bound: the seconds waited, or None when
        there was nothing to wait for."""
        since = self.clock.now()
        if self.state.hold(since, since) <= 0:
            return None
        loop = asyncio.get_running_loop()
        started = loop.time()
        self._waiters += 1
        try:
            while (left := self.state.left(self._waited(since, started, loop))) > 0:
                changed = self._changed
                try:
                    async with asyncio.timeout(left):
                        await changed.wait()
                except TimeoutError:
                    pass
        finally:
            self._waiters -= 1
        # The seconds reported (the metric) are the clock's, as the rest of the gateway's
        # times are, unless it went back meanwhile: then only the monotonic time is right.
        by_clock = (self.clock.now() - since).total_seconds()
        return by_clock if by_clock >= 0 else loop.time() - started

    def _waited(self, since: datetime, started: float, loop: asyncio.AbstractEventLoop) -> float:
        # The loop's monotonic time bounds the wait: a wall clock stepped back would otherwise
        # hold a request for as long as the step. The clock's own elapsed time still counts,
        # so a clock moved by hand (tests) ends the wait as before.
        return max(loop.time() - started, (self.clock.now() - since).total_seconds())

    async def admit(self) -> None:
        """A suspend's turn: after the backlog, or the bound (a held suspend counts in the metric)."""
        if not self.state.backlog:  # the common case: not even the clock is read
            return
        waited = await self.wait()
        if waited is not None and self._held is not None:
            self._held(waited)


__all__ = ["Admission", "Gate"]
