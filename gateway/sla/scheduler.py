"""SLA timers around a pure-ish `tick(now)`.

The database is the truth: every waiting approval has an indexed `wake_at` (its next reminder
or deadline). APScheduler's `AsyncIOScheduler` holds only two jobs, whatever the number of
pending approvals: ONE date job for the earliest `wake_at` (re-armed after each tick, and when
`Observer.wake_at` reports an earlier time), and an interval job, the safety poll, for wake-ups
that another process wrote. Each job runs `tick`, which applies everything due in batches through
`gateway.service.timers.Timers` (`Service.apply_due_many`), a compare-and-set: two schedulers
racing on one database (two replicas, or a restart that overlaps) apply each timeout exactly
once. Deadlines that passed while the gateway was down are due at the first tick, which runs at
start.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from gateway.core.clock import Clock
from gateway.service.timers import Timers

log = logging.getLogger("gateway.scheduler")
WAKE_JOB = "hitl-sla-wake"
POLL_JOB = "hitl-sla-poll"
_ERROR_BACKOFF = timedelta(seconds=1)
_IDLE_FLOOR = timedelta(milliseconds=50)


@dataclass(slots=True)
class TickReport:
    """What one tick did: counts per event (`timed_out`, `escalated`, `reminded`), `lost` for
    approvals another writer handled first, `errors`, and the next wake-up left in the database."""

    now: datetime
    applied: Counter[str] = field(default_factory=Counter)
    lost: int = 0
    errors: int = 0
    next_wake: datetime | None = None

    @property
    def total(self) -> int:
        return sum(self.applied.values())


class SlaScheduler:
    def __init__(
        self,
        timers: Timers,
        clock: Clock,
        *,
        batch: int = 500,
        poll_interval: timedelta = timedelta(seconds=30),
        owner: str = "scheduler",
        lease: timedelta = timedelta(seconds=60),
    ) -> None:
        self.timers, self.clock = timers, clock
        self.owner, self.lease = owner, lease
        self.batch, self.poll_interval = batch, poll_interval
        self.armed_at: datetime | None = None
        self.last_report: TickReport | None = None
        self._aps: AsyncIOScheduler | None = None
        self._lock = asyncio.Lock()
        self._ticking = False
        self._stopping = asyncio.Event()

    # ---------------------------------------------------------------- the pure-ish core
    async def tick(self, now: datetime | None = None) -> TickReport:
        """Apply every reminder, escalation and timeout due at `now`; return what was done.

        Reads at most `batch` approvals at a time (RAM does not grow with the backlog) and
        applies a batch concurrently, so the store's group commit folds it into few transactions."""
        now = now or self.clock.now()
        report = TickReport(now)
        while not self._stopping.is_set():  # a stopping gateway claims no more
            # A lease on each due row: a racing replica skips it; applying it releases it.
            due = await self.timers.claim_due(now, self.owner, self.lease, self.batch)
            if not due:
                break
            try:
                results = await self.timers.apply_due_many(due, now)
            except Exception:
                log.exception("applying %d due approvals failed; the next tick retries", len(due))
                report.errors += len(due)
                break
            if not self._count(report, results) or len(due) < self.batch:
                break
        report.next_wake = await self.timers.next_wake()
        if report.total or report.errors:
            log.info(
                "tick: %s lost=%d errors=%d",
                ", ".join(f"{k}={v}" for k, v in sorted(report.applied.items())) or "nothing",
                report.lost,
                report.errors,
            )
        return report

    @staticmethod
    def _count(report: TickReport, results: list[str | None]) -> bool:
        for result in results:
            if result is None:
                report.lost += 1
            else:
                report.applied[result] += 1
        return any(r is not None for r in results)

    # ---------------------------------------------------------------- APScheduler shell
    def notify(self, when: datetime | None) -> None:
        """`Observer.wake_at` (through the runtime): a commit set a wake-up; arm it if it is the earliest."""
        if self._aps is None or not self._aps.running or self._ticking or when is None:
            return  # a tick re-arms from the database when it ends
        if self.armed_at is None or when < self.armed_at:
            self._arm(when)

    def start(self) -> None:
        """Start APScheduler with the safety poll and a wake-up now (catch up after a downtime)."""
        logging.getLogger("apscheduler").setLevel(logging.WARNING)  # it logs every job at INFO
        aps = AsyncIOScheduler(
            timezone=UTC,
            job_defaults={"misfire_grace_time": None, "coalesce": True, "max_instances": 8},
        )
        aps.add_job(self._run, "interval", seconds=self.poll_interval.total_seconds(), id=POLL_JOB)
        self._aps = aps
        aps.start()
        self._arm(self.clock.now())

    def shutdown(self) -> None:
        if self._aps is not None and self._aps.running:
            self._aps.shutdown(wait=False)
        self._aps = None
        self.armed_at = None

    def stop(self) -> None:
        """Stop claiming: a tick in progress ends after its batch, no new tick starts."""
        self._stopping.set()

    async def run_forever(self) -> None:
        """A `Runtime.loops` entry: the scheduler lives as long as this task, or until `stop`."""
        self.start()
        try:
            await self._stopping.wait()
            if self._aps is not None and self._aps.running:
                self._aps.pause()  # no new wake-up; one already handed to the loop returns at once
            await asyncio.sleep(0.01)
            async with self._lock:  # let a tick in flight finish its batch before APScheduler goes
                pass
        finally:
            self.shutdown()
            async with self._lock:  # let a tick in flight end (or be cancelled) before the store closes
                pass

    def jobs(self) -> list[Any]:
        """APScheduler's jobs (for tests and the benchmark: never more than two)."""
        return [] if self._aps is None else list(self._aps.get_jobs())

    def _arm(self, when: datetime) -> None:
        """Point the one date job at `when` (APScheduler runs on wall time: arm the delay from
        our clock's now, so an injected clock works too)."""
        if self._aps is None:
            return
        self.armed_at = when
        delay = max(when - self.clock.now(), timedelta(0))
        run_date = datetime.now(UTC) + delay
        self._aps.add_job(self._run, "date", run_date=run_date, id=WAKE_JOB, replace_existing=True)

    async def _run(self) -> None:
        """One wake-up: tick, then arm the next wake-up the database holds."""
        if self._stopping.is_set():
            return
        async with self._lock:
            self._ticking = True
            self.armed_at = None
            floor = _ERROR_BACKOFF
            try:
                self.last_report = report = await self.tick(self.clock.now())
                floor = _ERROR_BACKOFF if report.errors else timedelta(0) if report.total else _IDLE_FLOOR
            except asyncio.CancelledError:  # APScheduler's shutdown cancels its running jobs
                log.info("scheduler tick cancelled at shutdown; the next start resumes from the database")
                return
            except Exception:
                log.exception("scheduler tick failed")
            finally:
                self._ticking = False
            await self._rearm(floor)

    async def _rearm(self, floor: timedelta) -> None:
        """Arm the earliest wake-up in the database, not sooner than `floor` from now: a tick that
        failed backs off, and one that found nothing to do (a timer that fired a hair early, or
        another replica that got there first) does not spin."""
        try:
            when = await self.timers.next_wake()
        except Exception:
            log.exception("scheduler could not read the next wake-up; the safety poll will retry")
            return
        if self.armed_at is not None and (when is None or self.armed_at <= when):
            return  # a commit armed an earlier wake-up while we read: keep it
        if when is not None:
            self._arm(max(when, self.clock.now() + floor))
