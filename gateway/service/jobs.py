"""Resume jobs: what the worker reads and writes, listing them, and an operator's `RetryJob`.

The worker (gateway/jobs/worker.py) decides how to launch and classify an attempt; every read and
write it does goes through `Jobs`, which holds the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from gateway.core.clock import Clock
from gateway.core.errors import Conflict, NotFound
from gateway.core.events import EventKind
from gateway.core.models import Approval, ClaimedJob, JobStatus, NewEvent, NewOutbox, ResumeJob
from gateway.core.observers import Observer
from gateway.core.webhooks import kind_of
from gateway.service.events import Announcer
from gateway.service.operators import authorize_repair
from gateway.store import Store

__all__ = ["Jobs", "RetryJob"]


@dataclass(frozen=True, slots=True)
class RetryJob:
    """Run the failed resume job of `approval_id` again, with a fresh attempt budget; `by` is
    the identity recorded (gateway.service.operators)."""

    approval_id: str
    by: str
    on_behalf_of: str | None = None


class Jobs:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        observer: Observer,
        *,
        has_operators: bool,
        announcer: Announcer | None = None,
    ) -> None:
        self.store, self.clock, self.observer = store, clock, observer
        self.has_operators = has_operators
        self.announcer = announcer  # job.succeeded and job.failed to the webhooks that want them

    # ---------------------------------------------------------------- the worker's loop
    async def claim(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[ClaimedJob]:
        """Lease the due jobs, each with what it launches with (its approval and its run's
        journal), read in the claim's transaction: the only approval read of a launch (the
        worker's journal calls read none)."""
        return await self.store.claim_launches(now, owner, lease, limit)

    async def extend_lease(self, job_id: int, owner: str, until: datetime, *, claim: int) -> bool:
        """False once `owner`'s claim number `claim` lost the job (its lease ran out and the job
        was claimed again, by another runner or by `owner`)."""
        return await self.store.extend_job_lease(job_id, owner, until, claim=claim)

    async def finish(
        self,
        job_id: int,
        owner: str,
        *,
        claim: int,
        now: datetime,
        status: JobStatus,
        next_attempt_at: datetime | None = None,
        error: str | None = None,
        output_tail: str | None = None,
        events: Sequence[NewEvent] = (),
        approval: Approval | None = None,
    ) -> bool:
        """Record an attempt's outcome if `owner` still holds the job, with the outbound events
        that announce it in the same commit. `approval`: the job's, as its launch read it (it was
        decided already, so it is what the announcement shows): not read again."""
        outbox = await self._announced(events, approval)
        done = await self.store.finish_job(
            job_id,
            owner,
            claim=claim,
            now=now,
            status=status,
            next_attempt_at=next_attempt_at,
            error=error,
            output_tail=output_tail,
            events=events,
            outbox=outbox,
        )
        if done and outbox:
            self.observer.outbox_queued()
        return done

    async def _announced(self, events: Sequence[NewEvent], known: Approval | None) -> list[NewOutbox]:
        out: list[NewOutbox] = []
        for e in events:
            kind = kind_of(e.kind)
            if self.announcer is None or kind is None or not self.announcer.wants(kind):
                continue
            approval = known if known is not None and known.id == e.approval_id else None
            if approval is None:
                approval = await self.store.get_approval(e.approval_id)  # read only when a webhook wants it
            if approval is not None:
                out += self.announcer.rows(kind, approval, e.at, e.data)
        return out

    # ---------------------------------------------------------------- operators
    async def find(
        self, status: JobStatus | None = None, limit: int = 100, *, agent: str | None = None
    ) -> list[ResumeJob]:
        """The jobs, newest first; `agent`: only that agent's approvals' jobs."""
        return await self.store.list_jobs(status, limit, agent=agent)

    async def retry(self, cmd: RetryJob) -> ResumeJob:
        """Requeue a failed job (API, CLI, web inbox); the worker is woken."""
        authorize_repair(cmd.by, has_operators=self.has_operators)
        job = await self.store.get_job(cmd.approval_id)
        if job is None:
            if await self.store.get_approval(cmd.approval_id) is None:
                raise NotFound(f"approval {cmd.approval_id!r} not found")
            raise NotFound(f"approval {cmd.approval_id!r} has no resume job")
        data = {"previous_error": job.last_error} | ({"on_behalf_of": cmd.on_behalf_of} if cmd.on_behalf_of else {})
        event = NewEvent(cmd.approval_id, EventKind.JOB_REQUEUED, self.clock.now(), cmd.by, data=data)
        if not await self.store.requeue_job(cmd.approval_id, self.clock.now(), [event]):
            raise Conflict(f"the resume job is {job.status.value}, only a failed job can be retried")
        self.observer.jobs_queued()
        requeued = await self.store.get_job(cmd.approval_id)
        assert requeued is not None
        return requeued
