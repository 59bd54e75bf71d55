"""`[scheduler]`: the SLA timers."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from gateway.core.errors import ConfigError
from gateway.settings.coerce import Coerce, duration, integer


@dataclass(frozen=True, slots=True)
class SchedulerSettings:
    """SLA timers: a safety poll in case another process moved a deadline, and the batch size."""

    poll_interval: timedelta = timedelta(seconds=30)
    batch: int = 500


KEYS: dict[str, Coerce] = {"poll_interval": duration, "batch": integer}


def check_scheduler(scheduler: SchedulerSettings) -> None:
    if scheduler.batch < 1:
        raise ConfigError("scheduler.batch", "must be at least 1")
    if scheduler.poll_interval.total_seconds() < 0.1:
        raise ConfigError("scheduler.poll_interval", "must be at least 100ms")


__all__ = ["KEYS", "SchedulerSettings", "check_scheduler"]
