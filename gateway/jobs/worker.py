"""Resume jobs: claim (with a lease), run the approval's worker, classify, record, retry.

A job row is created in the decision's own transaction (`Service._commit`), for every outcome
(approve, reject, timeout, cancel): the agent must learn the outcome to finish or compensate.
A runner leases due jobs; while an attempt runs it renews the lease, so only a crashed runner's
job is picked up again (after `lease`). Every attempt is an event: job_started, then
job_succeeded, job_retrying (transient, with backoff and jitter, up to max_attempts) or job_failed.
The claim itself appends each job's job_started (the store's `claim_launches`, in the claim's own
transaction: one commit less per attempt, and no claimed attempt without its event). So the checks
made after the claim (the approval is gone, the worker is not configured, the run's code_version
is not accepted, the attempts are exhausted) also follow a job_started, then a job_failed that says
why: the attempt was taken, then refused before any launch.

The same claim also reads each job's approval and its run's journal (in the claim's transaction,
no other per launch), and the rehydration document carries that journal (`journal`, as
GET /v1/runs/{run_id}/steps gives its `items`): a worker's SDK starts from it instead of a GET,
and its token opens the run's journal without an approval read, so a launch reads the approval
once. Above `LAUNCH_JOURNAL_MAX` bytes of JSON the journal is left out (a URL worker's receiver
may limit a POST body's size): the SDKs then GET it.
Every read and write goes through `gateway.service.jobs.Jobs`, which also holds an operator's
`RetryJob`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
import time
from asyncio import FIRST_COMPLETED
from collections import Counter
from datetime import datetime, timedelta

from gateway.core import loops, traces
from gateway.core.admission import Gate
from gateway.core.clock import Clock
from gateway.core.effects import effect_key
from gateway.core.events import EventKind
from gateway.core.models import Approval, ClaimedJob, JobStatus, NewEvent, ResumeJob
from gateway.core.redact import Redactor
from gateway.core.retry import backoff
from gateway.core.traces import Tracer
from gateway.core.versions import version_mismatch
from gateway.jobs import journal_pipe
from gateway.jobs.launch import (
    AttemptOutcome,
    AttemptResult,
    CommandLauncher,
    Launch,
    Launcher,
    NotLaunched,
    UrlLauncher,
)
from gateway.jobs.pool import EntrypointPool
from gateway.service import Service
from gateway.service.jobs import Jobs
from gateway.service.journal import RunJournal
from gateway.settings import WorkerSettings

log = logging.getLogger("gateway.worker")


def build_launcher(cfg: WorkerSettings, secret: str) -> Launcher:
    if cfg.kind == "command":
        return CommandLauncher(cfg)
    if cfg.kind == "entrypoint":
        return EntrypointPool(cfg)
    return UrlLauncher(cfg, cfg.secret or secret)


class WorkerRunner:
    def __init__(
        self,
        jobs: Jobs,
        service: Service,
        clock: Clock,
        owner: str,
        *,
        lease: timedelta = timedelta(seconds=60),
        concurrency: int = 8,
        prefetch: int = 1,
        poll_interval: float = 1.0,
        redactor: Redactor | None = None,
        tracer: Tracer | None = None,
        gate: Gate | None = None,
        journal: RunJournal | None = None,
    ) -> None:
        self.jobs, self.service, self.clock, self.owner = jobs, service, clock, owner
        # Pool processes make their journal calls over a socket answered through this use case
        # (gateway.jobs.journal_pipe), not over HTTP: one inbound request less per step.
        self.journal = journal
        # Told which claimed jobs wait to launch: suspends and new card posts wait for them (bounded).
        self.gate = gate
        self.lease, self.concurrency, self.poll_interval = lease, concurrency, poll_interval
        self.prefetch = prefetch  # claimed jobs per pool process that wait for it (see _pool_room)
        self.redactor = redactor or service.redactor
        self.tracer = tracer or Tracer()  # a span per launch, in its approval's trace; the worker continues it
        self.launchers: dict[str, Launcher] = {}
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._finish_by: float | None = None  # loop time: running jobs are cut at this point
        self._looping = False  # run_forever claims: only then does a backlog hold other work
        self._running: set[asyncio.Task[None]] = set()  # run_forever's jobs now running
        self._pooled: dict[int, str] = {}  # run_forever's pool jobs not out of their process yet: their worker

    def notify(self) -> None:
        self._wake.set()
        if self.gate is not None and self._looping and not self._stopping.is_set() and self._free() > 0:
            # Due jobs no claim has taken yet: new work waits for them (bounded). Not while every
            # slot is taken: no claim comes until a long job ends, and holding new work would
            # then only cost each suspend the whole bound.
            self.gate.queued()

    def stop(self, finish_by: float) -> None:
        """Stop claiming; the jobs running now may finish until `finish_by` (the event loop's
        time), then they are cut (their launch killed) and the runtime hands them back."""
        self._finish_by = finish_by
        self._stopping.set()
        self._wake.set()

    def launcher(self, cfg: WorkerSettings) -> Launcher:
        if cfg.name not in self.launchers:
            launcher = build_launcher(cfg, self.service.settings.security.secret_keys[-1])
            if isinstance(launcher, EntrypointPool) and self.gate is not None:
                launcher.on_start = self.gate.launched
            if isinstance(launcher, EntrypointPool) and self.journal is not None:
                limit = self.service.settings.server.max_body_bytes
                launcher.journal = functools.partial(journal_pipe.answer, self.journal, limit)
            self.launchers[cfg.name] = launcher
        return self.launchers[cfg.name]

    # ---------------------------------------------------------------- loops
    async def run_once(self) -> int:
        """Run every due job (up to `concurrency` at once); return how many were claimed."""
        jobs = await self.jobs.claim(self.clock.now(), self.owner, self.lease, self.concurrency)
        await asyncio.gather(*(self._guarded(claimed) for claimed in jobs))
        return len(jobs)

    async def drain(self, max_rounds: int = 100) -> int:
        """Run until nothing is due now (tests; retries scheduled later are left for later)."""
        return await loops.drain(self.run_once, max_rounds)

    async def run_forever(self) -> None:
        """Keep up to `concurrency` jobs running: a long job does not hold back the others. Once
        stopped, claim no more and let the running jobs finish until `finish_by`."""
        running = self._running
        self._looping = True
        try:
            while not self._stopping.is_set():
                claimed = await self._claim(self._free())
                for launch in claimed:
                    job = launch.job
                    task = asyncio.create_task(self._guarded(launch), name=f"resume-job-{job.id}")
                    running.add(task)
                    task.add_done_callback(running.discard)
                    if self._queues(job.worker):
                        self._pooled[job.id] = job.worker
                        task.add_done_callback(functools.partial(self._out_of_pool, job.id))
                    if self.gate is not None:  # a job that ended before its launch waits no more
                        task.add_done_callback(functools.partial(self._ended, job.approval_id))
                if claimed and self._free() > 0:
                    continue  # more may be due right now
                waiter = asyncio.create_task(self._wake.wait())
                try:
                    await asyncio.wait({waiter, *running}, timeout=self.poll_interval, return_when=FIRST_COMPLETED)
                finally:
                    waiter.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await waiter
                self._wake.clear()
            if self.gate is not None:  # stopping: nothing waits for this worker's claims any more
                self.gate.clear()
            if running and self._finish_by is not None:
                left = self._finish_by - asyncio.get_running_loop().time()
                log.info("stopping: waiting up to %.1fs for %d running resume jobs", max(left, 0), len(running))
                if left > 0:
                    await asyncio.wait(set(running), timeout=left)
        finally:
            self._looping = False
            if self.gate is not None:
                self.gate.clear()
            for task in list(running):  # cut: their process groups are killed; the runtime hands them back
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)

    def _free(self) -> int:
        """How many more jobs the next claim may take."""
        free = self.concurrency - len(self._running)
        room = self._pool_room()
        return free if room is None else min(free, room)

    def _pool_room(self) -> int | None:
        """With only `entrypoint` workers: the pools' free processes plus `prefetch` per process,
        less the claimed jobs waiting for one. None with any other kind (no bound but slots).

        Several replicas share the store's due jobs, and a job claimed here waits for this
        process's pool however idle another replica is (its lease is renewed all along): without
        this bound one replica took up to `resume_concurrency` jobs of a burst into a pool of 2
        while the others sat idle. The bound is taken before the claim, as the claim cannot pick
        jobs by worker; handing back the jobs claimed past it instead would cost a write each and
        an attempt already recorded (the claim appends `job_started`). The prefetch keeps a
        replica alone as fast as before: a freed process takes a job already claimed and read,
        and the claim that refills it overlaps that job's step. A job counts here until it leaves
        its process, not until its outcome is recorded (the record holds a slot, not a process).
        The claim cannot split the bound by worker either, so with several pools one may get
        more than its share of a claim; each pool's room is then counted on its own (a pool past
        its share has none, never less), so that a busy pool's queue cannot use up an idle
        pool's room and hold back its due jobs for as long as the busy pool's steps run (its
        jobs may then be claimed with the idle pool's room: at worst as before the bound, up to
        the slots). A `command` or `url` worker
        starts its job at once, so with one of those configured the claim does not know what it
        would queue and keeps the plain bound (the slots)."""
        workers = self.service.settings.workers.values()
        if not workers or any(cfg.kind != "entrypoint" for cfg in workers):
            return None
        waiting = Counter(self._pooled.values())
        return sum(max(0, cfg.pool_size * (1 + self.prefetch) - waiting[cfg.name]) for cfg in workers)

    def _out_of_pool(self, job_id: int, _task: object = None) -> None:
        """The job left its pool process (or ended without one): one more may be claimed now."""
        if job_id in self._pooled:
            del self._pooled[job_id]
            if self._looping:
                self._wake.set()

    async def _claim(self, free: int) -> list[ClaimedJob]:
        if free <= 0:
            if self.gate is not None:  # full: what is due waits for a slot, not new work for it
                self.gate.full()
            return []
        try:
            jobs = await self.jobs.claim(self.clock.now(), self.owner, self.lease, free)
        except Exception:
            log.exception("claiming resume jobs failed")
            return []
        if self.gate is not None:
            # Only a pool queues a job until one of its processes is free; the other kinds
            # launch it at once. A full claim may have left more due, but it also took every
            # free slot: those wait for a slot, and new work does not wait for them.
            queueing = [c.job.approval_id for c in jobs if self._queues(c.job.worker)]
            self.gate.claimed(queueing, more=False)
        return jobs

    def _queues(self, worker: str) -> bool:
        cfg = self.service.settings.workers.get(worker)
        return cfg is not None and cfg.kind == "entrypoint"

    def _ended(self, approval_id: str, _task: asyncio.Task[None]) -> None:
        if self.gate is not None:
            self.gate.launched(approval_id)

    async def close(self) -> None:
        for launcher in self.launchers.values():
            with contextlib.suppress(Exception):
                await launcher.close()
        self.launchers.clear()

    # ---------------------------------------------------------------- one job
    async def _guarded(self, claimed: ClaimedJob) -> None:
        job = claimed.job
        try:
            await self._run(claimed)
        except Exception:
            log.exception("resume job %s crashed; it will be retried", job.id)
            await self._record(job, None, AttemptResult(AttemptOutcome.TRANSIENT, "internal error"))

    async def _run(self, claimed: ClaimedJob) -> None:
        job, approval, journal = claimed
        cfg = self.service.settings.workers.get(job.worker)
        if approval is None or cfg is None:
            why = "approval not found" if approval is None else f"worker {job.worker!r} is not configured"
            await self._record(job, cfg, AttemptResult(AttemptOutcome.TERMINAL, why))
            return
        mismatch = version_mismatch(approval.code_version, cfg.name, cfg.accepts)
        if mismatch is not None:  # other code would resume it: not launched (retry after reconfiguring)
            await self._record(job, cfg, AttemptResult(AttemptOutcome.TERMINAL, mismatch), approval)
            return
        if job.attempts > cfg.max_attempts:  # its leases kept expiring: the runner crashed each time
            exhausted = AttemptResult(AttemptOutcome.TERMINAL, "attempts exhausted (leases expired)")
            await self._record(job, cfg, exhausted, approval)
            return
        # DEBUG: at INFO an approval's life is a few lines (suspended, decided, this job's outcome);
        # every step of it is in its audit trail (per-cycle INFO lines cost 12-19% of a cycle's CPU)
        log.debug("resume job %s (approval %s) attempt %d on %s", job.id, job.approval_id, job.attempts, cfg.name)
        key = effect_key(self.service.settings.security.secret_keys, approval.id, approval.step, approval.run_hash)
        launched: dict[str, str | int | bool] = {"hitl.worker": cfg.name, "hitl.attempt": job.attempts}
        attrs = traces.approval_attributes(approval.id, approval.run_id, approval.step, approval.agent, **launched)
        with self.tracer.span(traces.JOB_LAUNCH, approval.trace, attrs) as span:
            launch = Launch(
                approval_id=approval.id,
                document=self.service.resumes.rehydration_document(approval)
                | {"idempotency_key": key}
                | launch_journal([step.to_api() for step in journal]),
                token=self.service.resumes.worker_token(approval),
                gateway_url=self.service.settings.server.public_url,
                idempotency_key=key,
                trace=span.context,  # the worker's spans are this span's children
            )
            result = await self._attempt(job, cfg, launch, approval)
            span.set("hitl.result", result.verdict.value)
            if result.verdict is not AttemptOutcome.SUCCEEDED:
                span.failed(result.error or result.verdict.value)

    async def _attempt(self, job: ResumeJob, cfg: WorkerSettings, launch: Launch, approval: Approval) -> AttemptResult:
        """One launch, scrubbed and recorded, its lease renewed all along; the recorded result."""
        # The lease is renewed until the result is recorded, not only while the worker runs: a
        # slow write after a long step must not let another runner claim the job meanwhile.
        held = _Held(job.lease_until or self.clock.now() + self.lease)
        renew = asyncio.create_task(self._renew(job, held))
        launch = dataclasses.replace(launch, may_start=functools.partial(self._may_start, job, held))
        started = time.monotonic()
        try:
            try:
                try:
                    result = await self.launcher(cfg).run(launch)
                finally:  # its process is free again (or it never took one): claim the next now
                    self._out_of_pool(job.id)
            except NotLaunched:  # not ours any more, or stopping: the claim's holder (or the hand-back) has it
                log.info("resume job %s: not launched (lease lost or stopping)", job.id)
                return AttemptResult(AttemptOutcome.TRANSIENT, "not launched")
            self.service.observer.attempt(cfg.name, result.verdict.value, time.monotonic() - started)
            result = AttemptResult(  # an exception's message or an output tail can carry PII or the token
                result.verdict,
                self._scrub(result.error, launch.token),
                self._scrub(result.output, launch.token),
            )
            await self._record(job, cfg, result, approval)
            return result
        finally:
            renew.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renew

    def _scrub(self, text: str | None, token: str) -> str | None:
        return None if text is None else self.redactor.text(text.replace(token, "[resume token]"))

    async def _renew(self, job: ResumeJob, held: _Held) -> None:
        every = max(0.05, self.lease.total_seconds() / 3)
        while not held.lost:
            await asyncio.sleep(every)
            try:
                await self._extend(job, held)
            except Exception as exc:  # a store error once must not end the renewals: the next one may pass
                log.warning("resume job %s: renewing its lease failed (%s)", job.id, type(exc).__name__)

    async def _extend(self, job: ResumeJob, held: _Held) -> bool:
        until = self.clock.now() + self.lease
        if await self.jobs.extend_lease(job.id, self.owner, until, claim=job.claims):
            held.until = until
            return True
        held.lost = True
        log.warning("resume job %s: lost its lease", job.id)
        return False

    async def _may_start(self, job: ResumeJob, held: _Held) -> bool:
        """Before a launch that waited: the runner is not stopping, and the lease is still its own
        (renewed in time, or renewed now, which fails once another runner took the job)."""
        if held.lost or self._stopping.is_set():  # stopping: it would be cut mid-step; handed back instead
            return False
        return self.clock.now() < held.until or await self._extend(job, held)

    async def _record(
        self, job: ResumeJob, cfg: WorkerSettings | None, result: AttemptResult, approval: Approval | None = None
    ) -> None:
        """Record the attempt's outcome; `approval`, the one its launch read (announcements
        to webhooks reuse it instead of reading it again)."""
        now = self.clock.now()
        data: dict[str, object] = {"attempt": job.attempts, "worker": job.worker}
        retry_at = None
        if result.verdict is AttemptOutcome.SUCCEEDED:
            status, kind = JobStatus.SUCCEEDED, EventKind.JOB_SUCCEEDED
        elif result.verdict is AttemptOutcome.TRANSIENT and cfg is not None and job.attempts < cfg.max_attempts:
            delay = backoff(job.attempts, base=cfg.retry_base.total_seconds(), cap=3600)
            retry_at = now + timedelta(seconds=delay)
            status, kind = JobStatus.QUEUED, EventKind.JOB_RETRYING
            data["retry_in"] = round(delay, 3)
        else:
            status, kind = JobStatus.FAILED, EventKind.JOB_FAILED
        if result.error:
            data["error"] = result.error
        event = NewEvent(job.approval_id, kind, now, self.owner, data=data)
        ok = await self.jobs.finish(
            job.id,
            self.owner,
            claim=job.claims,  # this claim's: the job may have been claimed again since, even by this runner
            now=now,
            status=status,
            next_attempt_at=retry_at,
            error=result.error,
            output_tail=result.output,
            events=[event],
            approval=approval,
        )
        if not ok:
            log.warning("resume job %s: lease lost before recording %s", job.id, kind)
            return
        level = logging.INFO if status is not JobStatus.FAILED else logging.ERROR
        log.log(
            level,
            "resume job %s (approval %s) %s on %s, attempt %d: %s",
            job.id,
            job.approval_id,
            kind,
            job.worker,
            job.attempts,
            result.error or "ok",
        )


@dataclasses.dataclass(slots=True)
class _Held:
    """A job's lease as this runner last wrote it; `lost` once a renewal found it taken."""

    until: datetime
    lost: bool = False


# The most encoded JSON of a run's journal a launch document carries: a URL worker gets the
# document as a POST body, and its receiver may refuse a big one. Above it the SDK GETs the steps.
LAUNCH_JOURNAL_MAX = 256 * 1024


def launch_journal(steps: list[dict[str, object]]) -> dict[str, object]:
    """The document's `journal` field: the steps, or nothing when they exceed the cap."""
    size = len(json.dumps(steps, separators=(",", ":"), default=str).encode())
    return {"journal": steps} if size <= LAUNCH_JOURNAL_MAX else {}
