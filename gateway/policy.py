"""Pure rules: policy parsing, deadlines, who may decide, votes, quorum and timeouts.

Nothing here does I/O or reads a clock: every function that needs the time takes `now`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from gateway.durations import humanize, parse_duration
from gateway.errors import (
    AlreadyDecided,
    NotAnApprover,
    RequesterCannotDecide,
    ValidationError,
)
from gateway.models import Approval, Decision, OnTimeout, Outcome, Policy, Source, Status, Vote

_POLICY_FIELDS = {
    "name",
    "timeout",
    "on_timeout",
    "escalate_to",
    "escalation_timeout",
    "after_escalation",
    "remind",
    "quorum",
}


def _opt_duration(field: str, value: Any) -> timedelta | None:
    if value is None or value == "never":
        return None
    try:
        delta = parse_duration(value)
    except ValueError as exc:
        raise ValidationError(field, str(exc)) from None
    if delta.total_seconds() <= 0:
        raise ValidationError(field, "must be positive (or 'never')")
    return delta


def _enum(field: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValidationError(field, f"must be one of {', '.join(allowed)}, got {value!r}")
    return str(value)


def parse_policy(data: Mapping[str, Any], *, name: str = "inline", prefix: str = "") -> Policy:
    """Validate a policy object; a ValidationError names the bad field."""
    unknown = set(data) - _POLICY_FIELDS
    if unknown:
        raise ValidationError(f"{prefix}{sorted(unknown)[0]}", "unknown policy field")
    base = Policy()
    timeout = _opt_duration(f"{prefix}timeout", data.get("timeout", "30m"))
    on_timeout = OnTimeout(_enum(f"{prefix}on_timeout", data.get("on_timeout", "reject"), tuple(OnTimeout)))
    escalate_to = data.get("escalate_to", [])
    if not isinstance(escalate_to, list | tuple) or not all(isinstance(c, str) for c in escalate_to):
        raise ValidationError(f"{prefix}escalate_to", "must be a list of channels")
    if on_timeout is OnTimeout.ESCALATE and not escalate_to:
        raise ValidationError(f"{prefix}escalate_to", "required when on_timeout is 'escalate'")
    remind_raw = data.get("remind", [])
    if not isinstance(remind_raw, list | tuple):
        raise ValidationError(f"{prefix}remind", "must be a list of durations before the deadline")
    remind = []
    for i, r in enumerate(remind_raw):
        delta = _opt_duration(f"{prefix}remind[{i}]", r)
        if delta is None:
            raise ValidationError(f"{prefix}remind[{i}]", "must be a duration")
        remind.append(delta)
    if remind and timeout is None:
        raise ValidationError(f"{prefix}remind", "reminders need a timeout")
    quorum = data.get("quorum", 1)
    if isinstance(quorum, bool) or not isinstance(quorum, int) or quorum < 1:
        raise ValidationError(f"{prefix}quorum", "must be an integer >= 1")
    return Policy(
        name=str(data.get("name", name)),
        timeout=timeout,
        on_timeout=on_timeout,
        escalate_to=tuple(escalate_to),
        escalation_timeout=_opt_duration(f"{prefix}escalation_timeout", data.get("escalation_timeout")),
        after_escalation=Outcome(
            _enum(
                f"{prefix}after_escalation",
                data.get("after_escalation", base.after_escalation),
                ("approve", "reject"),
            )
        ),
        remind=tuple(sorted(set(remind), reverse=True)),
        quorum=quorum,
    )


# ---------------------------------------------------------------- time


def deadline_for(policy: Policy, start: datetime) -> datetime | None:
    return None if policy.timeout is None else start + policy.timeout


def reminder_times(approval: Approval) -> list[datetime]:
    """When reminders are due, earliest first (only those before the deadline)."""
    if approval.deadline is None:
        return []
    return [approval.deadline - r for r in approval.policy.remind]


def next_wake(approval: Approval) -> datetime | None:
    """The next instant the scheduler must look at this approval, or None."""
    if approval.status.final:
        return None
    pending = reminder_times(approval)[approval.reminders_sent :]
    candidates = [t for t in pending if approval.deadline is None or t < approval.deadline]
    if approval.deadline is not None:
        candidates.append(approval.deadline)
    return min(candidates) if candidates else None


# ---------------------------------------------------------------- who may decide


def check_may_decide(approver: str, approval: Approval, allowlist: Collection[str]) -> None:
    """Raise unless `approver` may decide: never the requester; the approval's own
    approvers if it names any, else the channel's configured allowlist."""
    if approval.requested_by and approver == approval.requested_by:
        raise RequesterCannotDecide(f"{approver} requested this approval and cannot decide it")
    allowed = approval.approvers or tuple(allowlist)
    if approver not in allowed:
        raise NotAnApprover(f"{approver} is not an approver of this approval")


# ---------------------------------------------------------------- transitions


@dataclass(frozen=True, slots=True)
class Transition:
    """The result of a pure decision: the new approval and the event that records it."""

    approval: Approval
    event: str
    final: bool
    data: Mapping[str, Any]


def _finish(approval: Approval, status: Status, decision: Decision) -> Approval:
    return approval.evolve(status=status, decision=decision, wake_at=None, version=approval.version + 1)


def apply_vote(approval: Approval, vote: Vote) -> Transition:
    """A human vote. Any reject vetoes; approvals count once per person until the quorum."""
    if approval.status.final:
        raise already_decided(approval)
    decision = Decision(
        outcome=vote.outcome,
        decided_by=vote.approver,
        decided_at=vote.at,
        source=Source.HUMAN,
        comment=vote.comment,
        channel=vote.channel,
    )
    if vote.outcome is Outcome.REJECT:
        new = _finish(approval.evolve(votes=(*approval.votes, vote)), Status.REJECTED, decision)
        return Transition(new, "rejected", True, {"by": vote.approver, "comment": vote.comment})
    if any(v.approver == vote.approver and v.outcome is Outcome.APPROVE for v in approval.votes):
        return Transition(approval, "duplicate_vote", False, {"by": vote.approver})
    voted = approval.evolve(votes=(*approval.votes, vote))
    count, needed = voted.approvals_count, approval.policy.quorum
    if count >= needed:
        return Transition(_finish(voted, Status.APPROVED, decision), "approved", True, {"by": vote.approver})
    new = voted.evolve(version=approval.version + 1)
    return Transition(new, "vote", False, {"by": vote.approver, "approvals": count, "required": needed})


def cancel(approval: Approval, by: str, reason: str | None, now: datetime) -> Transition:
    if approval.status.final:
        raise already_decided(approval)
    decision = Decision(Outcome.REJECT, by, now, Source.CANCEL, comment=reason)
    return Transition(_finish(approval, Status.CANCELLED, decision), "cancelled", True, {"by": by, "reason": reason})


def time_out(approval: Approval, now: datetime) -> Transition:
    """The deadline passed: escalate once if the policy says so, else decide by policy."""
    if approval.status.final:
        raise already_decided(approval)
    policy = approval.policy
    if policy.on_timeout is OnTimeout.ESCALATE and approval.escalations == 0:
        step = policy.escalation_timeout or policy.timeout
        deadline = None if step is None else now + step
        escalated = approval.evolve(
            escalations=1,
            deadline=deadline,
            reminders_sent=len(policy.remind),
            channels=tuple(dict.fromkeys((*approval.channels, *policy.escalate_to))),
            version=approval.version + 1,
        )
        escalated = escalated.evolve(wake_at=next_wake(escalated))
        data = {"to": list(policy.escalate_to), "deadline": deadline.isoformat() if deadline else None}
        return Transition(escalated, "escalated", False, data)
    outcome = policy.after_escalation if approval.escalations else Outcome(policy.on_timeout.value)
    elapsed = humanize(now - approval.created_at)
    reason = f"policy '{policy.name}': no decision after {elapsed}"
    if approval.escalations:
        reason += " (after escalation)"
    decision = Decision(outcome, "policy", now, Source.POLICY, reason=reason)
    return Transition(
        _finish(approval, Status.TIMED_OUT, decision),
        "timed_out",
        True,
        {"outcome": outcome.value, "reason": reason},
    )


def remind(approval: Approval) -> Transition:
    """Mark the next reminder as sent (the service queues the deliveries)."""
    new = approval.evolve(reminders_sent=approval.reminders_sent + 1, version=approval.version + 1)
    new = new.evolve(wake_at=next_wake(new))
    return Transition(new, "reminded", False, {"number": new.reminders_sent})


def due_action(approval: Approval, now: datetime) -> str | None:
    """What the scheduler must do now: 'timeout', 'remind' or nothing."""
    if approval.status.final:
        return None
    if approval.deadline is not None and approval.deadline <= now:
        return "timeout"
    pending = reminder_times(approval)[approval.reminders_sent :]
    if pending and pending[0] <= now:
        return "remind"
    return None


def already_decided(approval: Approval) -> AlreadyDecided:
    d = approval.decision
    if d is None:
        return AlreadyDecided(f"already {approval.status.value}")
    verb = {
        Status.APPROVED: "approved",
        Status.REJECTED: "rejected",
        Status.TIMED_OUT: "timed out",
        Status.CANCELLED: "cancelled",
    }.get(approval.status, approval.status.value)
    msg = (
        f"already {verb} by {d.decided_by}"
        if approval.status is not Status.TIMED_OUT
        else (f"already timed out ({d.outcome.value} by policy)")
    )
    return AlreadyDecided(msg, status=approval.status.value, decided_by=d.decided_by, outcome=d.outcome.value)
