"""Pure rules for extending a deadline: `extend = ["1h", "1d"]` and `max_extensions` in a policy.

An approver (or an operator) may push a waiting approval's deadline back by one of the policy's
`extend` durations, at most `max_extensions` times. The reminders count back from the new
deadline (those already behind `now` count as sent, so an extension never sends a burst). A
refusal is PolicyNotAllowed (403) naming the policy.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from gateway.core.clock import iso
from gateway.core.durations import format_duration, parse_duration
from gateway.core.errors import ExtendedMeanwhile, PolicyNotAllowed, ValidationError
from gateway.core.events import EventKind
from gateway.core.models import Approval
from gateway.core.policy import Transition, already_decided, later, next_wake, reminder_times


def parse_extension(value: object) -> timedelta:
    """The `duration` of an extend request ('1h'), or a ValidationError naming it."""
    if not isinstance(value, str):
        raise ValidationError("duration", "must be a duration like '1h'")
    try:
        delta = parse_duration(value)
    except ValueError as exc:
        raise ValidationError("duration", str(exc)) from None
    if delta <= timedelta(0):
        raise ValidationError("duration", "must be positive")
    return delta


def choices(approval: Approval) -> tuple[timedelta, ...]:
    """The extensions the approval can take now (none once decided, without a deadline, or
    after `max_extensions`): what cards offer as '+1h' buttons."""
    p = approval.policy
    if approval.status.final or approval.deadline is None or approval.extensions >= p.max_extensions:
        return ()
    return p.extend


def label(delta: timedelta) -> str:
    return f"+{format_duration(delta)}"


def extend(approval: Approval, duration: timedelta, by: str, now: datetime, *, seen: int | None = None) -> Transition:
    """The deadline moved back by `duration`, or PolicyNotAllowed naming the policy. `seen`: the
    number of extensions the asker saw (a page's form): ExtendedMeanwhile if there are more now,
    so that a double submit, or two approvers on one page, extend once."""
    if approval.status.final:
        raise already_decided(approval)
    if seen is not None and approval.extensions != seen:
        raise ExtendedMeanwhile(seen, approval.extensions)
    p = approval.policy
    allowed = ", ".join(format_duration(d) for d in p.extend)
    if duration not in p.extend:
        problem = f"allows extensions of {allowed}" if p.extend else "allows no extension (no `extend`)"
        raise PolicyNotAllowed("duration", f"policy '{p.name}' {problem}, not {format_duration(duration)}")
    if approval.extensions >= p.max_extensions:
        raise PolicyNotAllowed(
            "duration", f"policy '{p.name}' allows at most {p.max_extensions} extension(s) (max_extensions)"
        )
    if approval.deadline is None:
        raise PolicyNotAllowed("duration", f"policy '{p.name}': this approval has no deadline to extend")
    deadline = later(p, max(approval.deadline, now), duration)
    moved = approval.evolve(deadline=deadline, extensions=approval.extensions + 1, version=approval.version + 1)
    sent = sum(1 for t in reminder_times(moved) if t <= now)
    moved = moved.evolve(reminders_sent=sent)
    moved = moved.evolve(wake_at=next_wake(moved))
    data = {
        "by": by,
        "duration": format_duration(duration),
        "deadline": iso(deadline),
        "previous_deadline": iso(approval.deadline),
        "extensions": moved.extensions,
        "max_extensions": p.max_extensions,
        "policy": p.name,
    }
    return Transition(moved, EventKind.EXTENDED, False, data)


__all__ = ["choices", "extend", "label", "parse_extension"]
