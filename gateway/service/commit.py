"""The one write path of a decision: load, ask a pure rule what happens, write the transition
with its events, card deliveries and resume job in one compare-and-set transaction, then tell
the observers. Every use case that changes an approval plans a `Step` and hands it to
`Committer.transact`; none writes its own retry loop.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from gateway.core import policy as rules
from gateway.core.clock import Clock
from gateway.core.delegation import DelegationEvent
from gateway.core.errors import Conflict, NotFound
from gateway.core.events import EventKind
from gateway.core.grants import Grant
from gateway.core.models import Approval, NewEvent, NewOutbox, OutboxKind
from gateway.core.observers import Observer
from gateway.service.events import Announcer
from gateway.store import NewJob, Store, TransitionWrite

log = logging.getLogger("gateway.service")
CAS_RETRIES = 64
_SYNCED = frozenset({EventKind.VOTE, EventKind.EDITED, EventKind.EXTENDED})  # cards show what changed


@dataclass(frozen=True, slots=True)
class Step:
    """What a use case decided for the approval it was shown: the transition, who made it and
    through which channel, deliveries beyond the usual syncs, the instant (default: now), a
    standing grant the approve made, and the inbound de-duplication marks of the press that
    made it (all written in the same transaction: SeenBefore if a mark was recorded before)."""

    transition: rules.Transition
    actor: str | None
    channel: str | None
    outbox: Sequence[NewOutbox] = field(default_factory=tuple)
    at: datetime | None = None
    grant: Grant | None = None
    delegation: DelegationEvent | None = None  # the use of the delegation a vote was made through
    marks: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class Done:
    """What a use case did: the approval after it, and the event committed (or the one it
    answers without a write, as a duplicate vote; None: nothing to do)."""

    approval: Approval
    event: EventKind | None


Planner = Callable[[Approval], Awaitable[Step | Done]]


class Committer:
    def __init__(self, store: Store, clock: Clock, observer: Observer, announcer: Announcer | None = None) -> None:
        self.store, self.clock, self.observer = store, clock, observer
        self.announcer = announcer  # the outbound events of each transition (`[[events.webhooks]]`)

    async def load(self, approval_id: str) -> Approval:
        approval = await self.store.get_approval(approval_id)
        if approval is None:
            raise NotFound(f"approval {approval_id!r} not found")
        return approval

    async def transact(self, approval_id: str, plan: Planner, *, current: Approval | None = None) -> Done:
        """The compare-and-set loop: `plan` sees the approval as read (`current` first, when
        the caller just read it), and its Step commits only if nobody wrote the approval since;
        otherwise it is read again and planned again. `plan` raises to refuse."""
        approval = current
        for _ in range(CAS_RETRIES):
            if approval is None:
                approval = await self.load(approval_id)
            step = await plan(approval)
            if isinstance(step, Done):
                return step
            if await self.commit(approval, step):
                return Done(step.transition.approval, step.transition.event)
            approval = None
        raise Conflict("too much contention on this approval, retry")

    def write(self, before: Approval, step: Step) -> TransitionWrite:
        """Everything a transition commits: the approval (CAS on the old version), its events,
        card deliveries (syncs once decided or on a vote), the resume job and the outbound
        events that announce it."""
        transition = step.transition
        after = transition.approval
        now = step.at or self.clock.now()
        events = [NewEvent(after.id, transition.event, now, step.actor, step.channel, dict(transition.data))]
        outbox = list(step.outbox)
        job = None
        if transition.final or transition.event in _SYNCED:
            outbox += [NewOutbox(after.id, c, OutboxKind.SYNC) for c in after.channels]
        if transition.event is EventKind.EDITED and transition.data.get("reset_votes"):
            # the approvers who voted for other args are asked again, next to their card
            ask = {"edited": transition.data["round"], "number": after.reminders_sent}
            outbox += [NewOutbox(after.id, c, OutboxKind.REMIND, ask) for c in after.channels]
        if transition.final and after.worker:
            job = NewJob(after.id, after.worker)
            events.append(NewEvent(after.id, EventKind.JOB_QUEUED, now, data={"worker": after.worker}))
        if self.announcer is not None:
            outbox += self.announcer.announce(after, events)
        return TransitionWrite(after, before.version, events, outbox, job, step.grant, step.delegation, step.marks)

    async def commit(self, before: Approval, step: Step) -> bool:
        w = self.write(before, step)
        if not await self.store.save_transition(
            w.approval,
            w.expected_version,
            w.events,
            w.outbox,
            w.job,
            grant=w.grant,
            delegation=w.delegation,
            marks=w.marks,
        ):
            return False
        self.committed(w, step)
        return True

    def committed(self, w: TransitionWrite, step: Step, *, quiet: bool = False) -> None:
        """After a commit: the log line, the loops' wake-ups and the observers."""
        after, event = w.approval, step.transition.event
        via = f" via {step.channel}" if step.channel else ""
        (log.debug if quiet else log.info)("approval %s %s by %s%s", after.id, event, step.actor or "-", via)
        self.fire(outbox=bool(w.outbox), jobs=w.job is not None, wake=after.wake_at)
        self.observer.transition(after, event)

    def fire(self, *, outbox: bool = False, jobs: bool = False, wake: datetime | None = None) -> None:
        if outbox:
            self.observer.outbox_queued()
        if jobs:
            self.observer.jobs_queued()
        if wake is not None:
            self.observer.wake_at(wake)


__all__ = ["CAS_RETRIES", "Committer", "Done", "Planner", "Step"]
