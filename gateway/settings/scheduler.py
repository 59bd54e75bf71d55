"""`[scheduler]`: the SLA timers; decided approvals' resume jobs first, and how many run at once."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from gateway.core.errors import ConfigError
from gateway.settings.coerce import Coerce, duration, integer


@dataclass(frozen=True, slots=True)
class SchedulerSettings:
    """SLA timers: a safety poll in case another process moved a deadline, and the batch size.
    `admission_wait`: while decided approvals' resume jobs wait to launch, a suspend and the post
    of a new card wait for them at most this long (gateway/core/admission.py); 0 turns it off.
    `resume_concurrency`: the resume jobs this process holds at once, from its claim to its
    recorded outcome. A job holds its slot for its launch read, its run and its record, several
    event-loop turns each under load, so the limit must be well above the pool's processes: at 8
    with a pool of 4, the slots, not the processes, capped a loaded gateway's jobs (bench.cycle).
    `resume_prefetch`: when every worker is an `entrypoint` pool, the jobs claimed ahead per pool
    process (waiting for it, their launch read done); past the free processes and these, due jobs
    stay in the store for another replica instead of queueing here (gateway/jobs/worker.py)."""

    poll_interval: timedelta = timedelta(seconds=30)
    batch: int = 500
    admission_wait: timedelta = timedelta(milliseconds=250)
    resume_concurrency: int = 16
    resume_prefetch: int = 1


KEYS: dict[str, Coerce] = {
    "poll_interval": duration,
    "batch": integer,
    "admission_wait": duration,
    "resume_concurrency": integer,
    "resume_prefetch": integer,
}
MAX_RESUME_CONCURRENCY = 1000
MAX_RESUME_PREFETCH = 100
MAX_ADMISSION_WAIT = timedelta(seconds=5)


def check_scheduler(scheduler: SchedulerSettings, lease: timedelta) -> None:
    if scheduler.batch < 1:
        raise ConfigError("scheduler.batch", "must be at least 1")
    if not 1 <= scheduler.resume_concurrency <= MAX_RESUME_CONCURRENCY:
        raise ConfigError("scheduler.resume_concurrency", f"must be between 1 and {MAX_RESUME_CONCURRENCY}")
    if not 0 <= scheduler.resume_prefetch <= MAX_RESUME_PREFETCH:
        raise ConfigError("scheduler.resume_prefetch", f"must be between 0 and {MAX_RESUME_PREFETCH}")
    if scheduler.poll_interval.total_seconds() < 0.1:
        raise ConfigError("scheduler.poll_interval", "must be at least 100ms")
    # A held post is already claimed: it must still be sent well inside its lease.
    if not timedelta(0) <= scheduler.admission_wait <= min(MAX_ADMISSION_WAIT, lease / 4):
        raise ConfigError("scheduler.admission_wait", "must be between 0 and 5s, and at most a quarter of store.lease")


__all__ = ["KEYS", "MAX_ADMISSION_WAIT", "SchedulerSettings", "check_scheduler"]
