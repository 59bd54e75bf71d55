"""Pure rules: policy parsing, deadlines, who may decide, votes, quorum and timeouts.

Nothing here does I/O or reads a clock: every function that needs the time takes `now`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from gateway.core.calendar import SEARCH_DAYS, Calendar, check_duration
from gateway.core.clock import iso
from gateway.core.durations import format_duration, humanize, parse_duration
from gateway.core.errors import (
    AlreadyDecided,
    NotAnApprover,
    RequesterCannotDecide,
    ValidationError,
)
from gateway.core.events import EventKind
from gateway.core.grants import parse_grant_keys
from gateway.core.models import Approval, Decision, OnTimeout, Outcome, Policy, Source, Status, Vote

_POLICY_FIELDS = {
    "timeout",
    "on_timeout",
    "escalate_to",
    "escalation_timeout",
    "after_escalation",
    "remind",
    "quorum",
    "extend",
    "max_extensions",
    "require_reason",
    "grants",
    "grant_max",
    "grant_fields",
    "calendar",
}
MAX_REMINDERS = 10
MAX_EXTENSIONS = 100
MAX_QUORUM = 100


def _opt_duration(field: str, value: Any, *, never: bool = True) -> timedelta | None:
    if value is None or (never and value == "never"):
        return None
    try:
        delta = parse_duration(value)
    except ValueError as exc:
        raise ValidationError(field, str(exc)) from None
    if delta.total_seconds() <= 0:
        raise ValidationError(field, "must be positive" + (" (or 'never')" if never else ""))
    return delta


def _enum(field: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValidationError(field, f"must be one of {', '.join(allowed)}, got {value!r}")
    return str(value)


def _channels(field: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(c, str) and c for c in value):
        raise ValidationError(field, "must be a list of channel addresses like 'web' or '<kind>:<target>'")
    return tuple(dict.fromkeys(value))


def _reminders(field: str, value: Any, timeout: timedelta | None) -> tuple[timedelta, ...]:
    if not isinstance(value, list | tuple):
        raise ValidationError(field, "must be a list of durations before the deadline, like ['10m', '1m']")
    if len(value) > MAX_REMINDERS:
        raise ValidationError(field, f"at most {MAX_REMINDERS} reminders")
    out: list[timedelta] = []
    for i, raw in enumerate(value):
        delta = _opt_duration(f"{field}[{i}]", raw, never=False)
        assert delta is not None
        if timeout is not None and delta >= timeout:
            raise ValidationError(
                f"{field}[{i}]", "must be shorter than the timeout (it counts back from the deadline)"
            )
        out.append(delta)
    if out and timeout is None:
        raise ValidationError(field, "reminders need a timeout (they count back from the deadline)")
    return tuple(sorted(set(out), reverse=True))  # the earliest reminder first


def _quorum(field: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_QUORUM:
        raise ValidationError(field, f"must be an integer from 1 to {MAX_QUORUM}")
    return value


def _name(data: Mapping[str, Any], name: str, inline: bool) -> str:
    if "name" not in data:
        return name
    if not inline:
        raise ValidationError("name", "a configured policy is named by its table, [policies.NAME]")
    value = data["name"]
    if not isinstance(value, str) or not 1 <= len(value) <= 64:
        raise ValidationError("policy.name", "must be a string of 1 to 64 characters")
    return value


def parse_policy(
    data: Mapping[str, Any],
    *,
    name: str = "inline",
    prefix: str = "",
    calendars: Mapping[str, Calendar] | None = None,
) -> Policy:
    """Validate a policy object; a ValidationError names the bad field (with `prefix`).

    Fields left out take the built-in defaults of `Policy` (an inline policy may carry a
    `name`, used as a label in reasons; a configured one is named by its table). `calendar`
    names one of `calendars` (the `[calendars.NAME]` tables)."""
    inline = name == "inline"
    unknown = set(data) - _POLICY_FIELDS - ({"name"} if inline else set())
    if unknown:
        raise ValidationError(
            f"{prefix}{sorted(unknown)[0]}", f"unknown policy field (known: {', '.join(sorted(_POLICY_FIELDS))})"
        )
    base = Policy()
    timeout = _opt_duration(f"{prefix}timeout", data.get("timeout", "30m"))
    on_timeout = OnTimeout(
        _enum(f"{prefix}on_timeout", data.get("on_timeout", base.on_timeout.value), tuple(OnTimeout))
    )
    escalate_to = _channels(f"{prefix}escalate_to", data.get("escalate_to", []))
    if on_timeout is OnTimeout.ESCALATE and not escalate_to:
        raise ValidationError(f"{prefix}escalate_to", "required when on_timeout is 'escalate'")
    if on_timeout is OnTimeout.ESCALATE and timeout is None:
        raise ValidationError(f"{prefix}timeout", "on_timeout 'escalate' needs a timeout, not 'never'")
    after = _enum(
        f"{prefix}after_escalation", data.get("after_escalation", base.after_escalation.value), tuple(Outcome)
    )
    policy = Policy(
        name=_name(data, name, inline),
        timeout=timeout,
        on_timeout=on_timeout,
        escalate_to=escalate_to,
        escalation_timeout=_opt_duration(f"{prefix}escalation_timeout", data.get("escalation_timeout"), never=False),
        after_escalation=Outcome(after),
        remind=_reminders(f"{prefix}remind", data.get("remind", []), timeout),
        quorum=_quorum(f"{prefix}quorum", data.get("quorum", 1)),
        **_extensions(prefix, data, timeout),
        **parse_grant_keys(data, prefix),
        calendar=_calendar(f"{prefix}calendar", data.get("calendar"), calendars or {}),
    )
    if policy.calendar is not None:
        _check_business(policy.calendar, prefix, policy)
    return policy


def _calendar(field: str, value: Any, calendars: Mapping[str, Calendar]) -> Calendar | None:
    if value is None:
        return None
    if isinstance(value, Calendar):
        return value
    known = ", ".join(sorted(calendars)) or "none configured"
    if not isinstance(value, str):
        raise ValidationError(field, f"must name a configured calendar, [calendars.NAME] (known: {known})")
    if value not in calendars:
        raise ValidationError(field, f"unknown calendar {value[:64]!r} (known: {known}; see [calendars.NAME])")
    return calendars[value]


def _check_business(calendar: Calendar, prefix: str, policy: Policy) -> None:
    """Every duration a calendar counts stays within what it can count (one year of its hours)."""
    check_duration(calendar, f"{prefix}timeout", policy.timeout)
    check_duration(calendar, f"{prefix}escalation_timeout", policy.escalation_timeout)
    for i, delta in enumerate(policy.extend):
        check_duration(calendar, f"{prefix}extend[{i}]", delta)


def _extensions(prefix: str, data: Mapping[str, Any], timeout: timedelta | None) -> dict[str, Any]:
    """`extend` (durations an approver may add to the deadline), `max_extensions` (default 1
    when `extend` is given) and `require_reason` (a reject must say why)."""
    raw = data.get("extend", [])
    if not isinstance(raw, list | tuple) or len(raw) > MAX_REMINDERS:
        raise ValidationError(
            f"{prefix}extend", f"must be a list of at most {MAX_REMINDERS} durations, like ['1h', '1d']"
        )
    extend = []
    for i, value in enumerate(raw):
        delta = _opt_duration(f"{prefix}extend[{i}]", value, never=False)
        assert delta is not None
        extend.append(delta)
    if extend and timeout is None:
        raise ValidationError(f"{prefix}extend", "extensions need a timeout (there is no deadline to extend)")
    most = data.get("max_extensions", 1 if extend else 0)
    if isinstance(most, bool) or not isinstance(most, int) or not 0 <= most <= MAX_EXTENSIONS:
        raise ValidationError(f"{prefix}max_extensions", f"must be an integer from 0 to {MAX_EXTENSIONS}")
    reason = data.get("require_reason", False)
    if not isinstance(reason, bool):
        raise ValidationError(f"{prefix}require_reason", "must be true or false")
    return {"extend": tuple(sorted(set(extend))), "max_extensions": most if extend else 0, "require_reason": reason}


# ---------------------------------------------------------------- time


def later(policy: Policy, start: datetime, duration: timedelta) -> datetime:
    """`duration` after `start` on the policy's clock: business time with a calendar."""
    return start + duration if policy.calendar is None else policy.calendar.add(start, duration)


def earlier(policy: Policy, end: datetime, duration: timedelta) -> datetime:
    """`duration` before `end` on the policy's clock (a reminder before its deadline)."""
    return end - duration if policy.calendar is None else policy.calendar.subtract(end, duration)


def time_between(policy: Policy, start: datetime, end: datetime) -> timedelta:
    """The time from `start` to `end` on the policy's clock (what a deadline means as a timeout)."""
    return end - start if policy.calendar is None else policy.calendar.between(start, end)


def waited(policy: Policy, start: datetime, now: datetime) -> str:
    """How long an approval waited, for reasons: '1 h', or with a calendar '4 h of office business
    hours' (a 4 h timeout set on Friday evening did not wait 67 hours). Real time past the
    calendar's search bound (an approval left for years)."""
    calendar = policy.calendar
    if calendar is None or now - start > timedelta(days=SEARCH_DAYS):
        return humanize(now - start)
    return f"{humanize(calendar.between(start, now))} of {calendar.name} business hours"


def deadline_for(policy: Policy, start: datetime) -> datetime | None:
    return None if policy.timeout is None else later(policy, start, policy.timeout)


def escalation_step(policy: Policy) -> timedelta | None:
    """How long an escalated approval waits: `escalation_timeout`, else `timeout` again."""
    return policy.escalation_timeout or policy.timeout


def period_start(approval: Approval) -> datetime:
    """When the current wait began: at creation, or at the escalation."""
    step = escalation_step(approval.policy)
    if approval.escalations and approval.deadline is not None and step is not None:
        return earlier(approval.policy, approval.deadline, step)
    return approval.created_at


def reminder_times(approval: Approval) -> list[datetime]:
    """When the reminders of the current wait are due, earliest first. Reminders count back from
    the deadline; one that would fall before the wait began is dropped."""
    if approval.deadline is None:
        return []
    start = period_start(approval)
    deadline, policy = approval.deadline, approval.policy
    return [t for t in (earlier(policy, deadline, r) for r in policy.remind) if t > start]


def pending_reminders(approval: Approval) -> list[datetime]:
    return reminder_times(approval)[approval.reminders_sent :]


def next_wake(approval: Approval) -> datetime | None:
    """The next instant the scheduler must look at this approval, or None."""
    if approval.status.final:
        return None
    candidates = pending_reminders(approval)[:1]
    if approval.deadline is not None:
        candidates.append(approval.deadline)
    return min(candidates) if candidates else None


def first_wake(policy: Policy, created_at: datetime, deadline: datetime | None) -> datetime | None:
    """`next_wake` of a new approval (waiting, no escalation, no reminder sent yet), before the
    approval exists: the first reminder after `created_at`, else the deadline."""
    if deadline is None:
        return None
    first = next((t for t in (earlier(policy, deadline, r) for r in policy.remind) if t > created_at), None)
    return deadline if first is None else min(first, deadline)


def reminders_view(approval: Approval) -> list[dict[str, Any]]:
    """The reminders of the current wait for the API: when each is due and whether it is done
    (sent, or skipped because a later one was due at the same time after a downtime)."""
    return [
        {
            "at": iso(t),
            "before_deadline": (
                format_duration(time_between(approval.policy, t, approval.deadline)) if approval.deadline else None
            ),
            "done": i < approval.reminders_sent,
        }
        for i, t in enumerate(reminder_times(approval))
    ]


# ---------------------------------------------------------------- who may decide


def _itself(identity: str) -> str:
    return identity


def _nobody(group: str, identity: str) -> bool:
    return False


Member = Callable[[str, str], bool]  # (group:NAME, identity) -> whether the identity is in the group


def _is_group(name: str) -> bool:
    return name.startswith("group:")


def check_may_decide(
    approver: str,
    approval: Approval,
    allowlist: Collection[str],
    party: Callable[[str], str] = _itself,
    member: Member = _nobody,
) -> None:
    """Raise unless `approver` may decide: never the requester, under any of the requester's
    identities; only someone on the channel's configured allowlist, narrowed to the approval's
    own approvers when it names any. The agent that suspends chooses `approvers`, so they may
    narrow the operator's allowlist, never widen it: a channel with no configured allowlist has
    nobody who may decide on it, whoever the approval names. `party(identity)` says who an
    identity stands for (`Identities.party`: one person's identities are one party), so a person
    named under one identity is matched under any of theirs; `member(group, identity)` expands a
    `group:NAME` named in either list (`Identities.in_group`, an empty group names nobody). All
    identities are canonical: nothing here compares free text."""
    if approval.requested_by and party(approval.requested_by) == party(approver):
        raise RequesterCannotDecide(f"{approver} requested this approval and cannot decide it")
    listed = approver in allowlist or any(member(g, approver) for g in allowlist if _is_group(g))
    if not listed or not deciders((approver,), approval.approvers, approval.requested_by, party, member):
        raise NotAnApprover(f"{approver} is not an approver of this approval")


def deciders(
    allowlist: Collection[str],
    approvers: Collection[str],
    requested_by: str | None,
    party: Callable[[str], str] = _itself,
    member: Member = _nobody,
) -> frozenset[str]:
    """Who on `allowlist` (a channel's configured approvers) may decide an approval that names
    `approvers` (none: anyone listed; identities and `group:NAME`s) and was requested by
    `requested_by`."""
    named = {party(a) for a in approvers if not _is_group(a)}
    groups = [a for a in approvers if _is_group(a)]
    me = party(requested_by) if requested_by else None

    def is_named(i: str) -> bool:
        return not approvers or party(i) in named or any(member(g, i) for g in groups)

    return frozenset(i for i in allowlist if not _is_group(i) and party(i) != me and is_named(i))


# ---------------------------------------------------------------- transitions


@dataclass(frozen=True, slots=True)
class Transition:
    """The result of a pure decision: the new approval and the event that records it."""

    approval: Approval
    event: EventKind
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
        source=Source.OPERATOR if vote.approver.startswith("operator:") else Source.HUMAN,
        comment=vote.comment,
        channel=vote.channel,
        on_behalf_of=vote.on_behalf_of,
        person=vote.person,
        name=vote.name,
    )
    by = _by(vote.approver, vote.person)
    if vote.outcome is Outcome.REJECT:
        new = _finish(approval.evolve(votes=(*approval.votes, vote)), Status.REJECTED, decision)
        return Transition(new, EventKind.REJECTED, True, {**by, "comment": vote.comment})
    # one party counts once, and one human approves once (for themselves or for a delegator)
    if any((v.party == vote.party or v.voter == vote.voter) and v.outcome is Outcome.APPROVE for v in approval.votes):
        return Transition(approval, EventKind.DUPLICATE_VOTE, False, by)
    voted = approval.evolve(votes=(*approval.votes, vote))
    count, needed = voted.approvals_count, approval.policy.quorum
    if count >= needed:
        return Transition(_finish(voted, Status.APPROVED, decision), EventKind.APPROVED, True, by)
    new = voted.evolve(version=approval.version + 1)
    return Transition(new, EventKind.VOTE, False, {**by, "approvals": count, "required": needed})


def _by(actor: str, person: str | None) -> dict[str, Any]:
    """Who acted, for the audit trail: the identity, and the person's name when there is one."""
    return {"by": actor, "person": person} if person else {"by": actor}


def cancel(
    approval: Approval,
    by: str,
    reason: str | None,
    now: datetime,
    on_behalf_of: str | None = None,
    person: str | None = None,
) -> Transition:
    if approval.status.final:
        raise already_decided(approval)
    decision = Decision(
        Outcome.REJECT, by, now, Source.CANCEL, comment=reason, on_behalf_of=on_behalf_of, person=person
    )
    data = {**_by(by, person), "reason": reason} | ({"on_behalf_of": on_behalf_of} if on_behalf_of else {})
    return Transition(_finish(approval, Status.CANCELLED, decision), EventKind.CANCELLED, True, data)


def time_out(approval: Approval, now: datetime) -> Transition:
    """The deadline passed: escalate once if the policy says so, else decide by policy.

    An escalation adds `escalate_to` to the channels, starts a new wait of `escalation_step`
    from `now` (people get the whole window even after a downtime) and restarts its reminders.
    A `group:NAME` among the targets is people, not a channel: it joins the approval's approvers
    (when they name any: else everyone listed may already decide)."""
    if approval.status.final:
        raise already_decided(approval)
    policy = approval.policy
    elapsed = waited(policy, approval.created_at, now)
    if policy.on_timeout is OnTimeout.ESCALATE and approval.escalations == 0:
        step = escalation_step(policy)
        deadline = None if step is None else later(policy, now, step)
        groups = tuple(t for t in policy.escalate_to if _is_group(t))
        targets = tuple(t for t in policy.escalate_to if not _is_group(t))
        approvers = tuple(dict.fromkeys((*approval.approvers, *groups))) if approval.approvers else ()
        escalated = approval.evolve(
            escalations=1,
            deadline=deadline,
            reminders_sent=0,
            channels=tuple(dict.fromkeys((*approval.channels, *targets))),
            approvers=approvers,
            version=approval.version + 1,
        )
        escalated = escalated.evolve(wake_at=next_wake(escalated))
        data = {"to": list(policy.escalate_to), "deadline": iso(deadline), "policy": policy.name, "elapsed": elapsed}
        return Transition(escalated, EventKind.ESCALATED, False, data)
    outcome = policy.after_escalation if approval.escalations else Outcome(policy.on_timeout.value)
    reason = f"policy '{policy.name}': no decision after {elapsed}"
    if approval.escalations:
        reason += " (after escalation)"
    decision = Decision(outcome, "policy", now, Source.POLICY, reason=reason)
    data = {"outcome": outcome.value, "reason": reason, "policy": policy.name, "elapsed": elapsed}
    return Transition(_finish(approval, Status.TIMED_OUT, decision), EventKind.TIMED_OUT, True, data)


def remind(approval: Approval, now: datetime | None = None) -> Transition:
    """Mark the reminders due at `now` (default: the next one's time) as sent; the service
    queues one delivery per channel.

    After a downtime several may be due at once: only the latest is sent, the others are
    recorded as skipped, so people get one nudge and not a burst."""
    pending = pending_reminders(approval)
    at = now or (pending[0] if pending else None)
    due = [t for t in pending if at is not None and t <= at]
    if approval.status.final or not due or at is None:
        raise ValueError("no reminder is due")
    now = at
    new = approval.evolve(reminders_sent=approval.reminders_sent + len(due), version=approval.version + 1)
    new = new.evolve(wake_at=next_wake(new))
    left = approval.deadline - now if approval.deadline else None
    data = {
        "number": new.reminders_sent,
        "due_at": iso(due[-1]),
        "skipped": len(due) - 1,
        "left": humanize(left) if left is not None else None,
    }
    return Transition(new, EventKind.REMINDED, False, data)


class DueAction(StrEnum):
    """What the scheduler must do to an approval whose time has come."""

    TIMEOUT = "timeout"
    REMIND = "remind"


def due_action(approval: Approval, now: datetime) -> DueAction | None:
    """What the scheduler must do now: time it out, remind, or nothing."""
    if approval.status.final:
        return None
    if approval.deadline is not None and approval.deadline <= now:
        return DueAction.TIMEOUT
    pending = pending_reminders(approval)
    if pending and pending[0] <= now:
        return DueAction.REMIND
    return None


def apply_due(approval: Approval, now: datetime) -> Transition | None:
    """The transition the scheduler applies at `now`, or None when nothing is due."""
    action = due_action(approval, now)
    if action is DueAction.TIMEOUT:
        return time_out(approval, now)
    if action is DueAction.REMIND:
        return remind(approval, now)
    return None


def already_decided(approval: Approval) -> AlreadyDecided:
    d = approval.decision
    if d is None:
        return AlreadyDecided(f"already {approval.status.value}")
    msg = (
        f"already {approval.status.verb} by {d.decided_by}"
        if approval.status is not Status.TIMED_OUT
        else (f"already timed out ({d.outcome.value} by policy)")
    )
    return AlreadyDecided(msg, status=approval.status.value, decided_by=d.decided_by, outcome=d.outcome.value)
