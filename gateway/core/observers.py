"""One typed observer protocol: what the gateway committed, told after the commit.

The use cases (service), the outbox and the worker report to an `Observer`; the runtime wires
who listens: its background loops (wake up early when work was queued or a deadline moved) and
the Prometheus metrics. Every method does nothing by default, and an observer overrides what it
needs. Observers run on the event loop inside the caller's call: they must be quick, and they
must not do I/O (a loop's `notify` sets an event; a metric increments a counter).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from gateway.core.models import Approval, OutboxKind

AnObserver = TypeVar("AnObserver", bound="Observer")


class Observer:
    def outbox_queued(self) -> None:
        """Card deliveries are due (a commit queued them, or another replica said so)."""

    def jobs_queued(self) -> None:
        """Resume jobs are due."""

    def wake_at(self, when: datetime) -> None:
        """An approval's next SLA instant (deadline, escalation or reminder) is `when`."""

    def transition(self, approval: Approval, event: str) -> None:
        """A committed transition: the approval after it, and the event that records it."""

    def delivered(self, channel: str, kind: OutboxKind, event: str) -> None:
        """A delivery was recorded (by the outbox, or in the suspend's own commit for web cards):
        the channel address, the delivery kind, and its result event."""

    def attempt(self, worker: str, result: str, seconds: float) -> None:
        """A worker attempt ended: `succeeded`, `retry` or `failed`, after `seconds`."""


class Observers(Observer):
    """Fans each report out to the observers that implement it (the others cost nothing: the
    hot paths call one list per event, not every observer's no-op)."""

    def __init__(self, *members: Observer) -> None:
        self._outbox: list[Callable[[], None]] = []
        self._jobs: list[Callable[[], None]] = []
        self._wake: list[Callable[[datetime], None]] = []
        self._transition: list[Callable[[Approval, str], None]] = []
        self._delivered: list[Callable[[str, OutboxKind, str], None]] = []
        self._attempt: list[Callable[[str, str, float], None]] = []
        for member in members:
            self.add(member)

    def add(self, member: AnObserver) -> AnObserver:
        def overrides(name: str) -> bool:
            return getattr(type(member), name) is not getattr(Observer, name)

        if overrides("outbox_queued"):
            self._outbox.append(member.outbox_queued)
        if overrides("jobs_queued"):
            self._jobs.append(member.jobs_queued)
        if overrides("wake_at"):
            self._wake.append(member.wake_at)
        if overrides("transition"):
            self._transition.append(member.transition)
        if overrides("delivered"):
            self._delivered.append(member.delivered)
        if overrides("attempt"):
            self._attempt.append(member.attempt)
        return member

    def outbox_queued(self) -> None:
        for fn in self._outbox:
            fn()

    def jobs_queued(self) -> None:
        for fn in self._jobs:
            fn()

    def wake_at(self, when: datetime) -> None:
        for fn in self._wake:
            fn(when)

    def transition(self, approval: Approval, event: str) -> None:
        for fn in self._transition:
            fn(approval, event)

    def delivered(self, channel: str, kind: OutboxKind, event: str) -> None:
        for fn in self._delivered:
            fn(channel, kind, event)

    def attempt(self, worker: str, result: str, seconds: float) -> None:
        for fn in self._attempt:
            fn(worker, result, seconds)


__all__ = ["Observer", "Observers"]
