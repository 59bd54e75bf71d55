"""Pure rules for what an agent may choose about its own approval's policy.

The operator's config is the authority. An agent may:
- name a configured policy (`"policy": "payments"`);
- name one and set the keys that policy lists in `agent_may_set`, within its bounds
  (`"policy": {"name": "content", "timeout": "45m"}`, or a suspend `deadline`, which chooses the
  timeout as an instant; `max_timeout` / `min_timeout` bound both);
- give an inline policy, as `security.inline_policies` allows: `restrict` (the default) refuses
  one that approves on its own (`on_timeout` or `after_escalation` = `approve`), that lowers the
  default policy's quorum, drops its `require_reason` or offers standing grants, `deny` refuses every inline policy,
  `allow` takes it as it is.
A refusal is `PolicyNotAllowed` (403) naming the field. Operators are trusted with policies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from gateway.core.calendar import Calendar
from gateway.core.durations import format_duration, parse_duration
from gateway.core.errors import PolicyNotAllowed, ValidationError
from gateway.core.models import OnTimeout, Outcome, Policy
from gateway.core.policy import parse_policy

INLINE_MODES = ("restrict", "deny", "allow")
SETTABLE = ("timeout", "on_timeout", "escalate_to", "escalation_timeout", "after_escalation", "remind", "quorum")
BOUND_KEYS = ("agent_may_set", "max_timeout", "min_timeout")


@dataclass(frozen=True, slots=True)
class AgentBounds:
    """What a named policy lets the agent choose: `may_set` keys, the timeout within bounds."""

    may_set: frozenset[str] = frozenset()
    max_timeout: timedelta | None = None
    min_timeout: timedelta | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "agent_may_set": sorted(self.may_set),
            "max_timeout": format_duration(self.max_timeout) if self.max_timeout else None,
            "min_timeout": format_duration(self.min_timeout) if self.min_timeout else None,
        }


NO_CHOICE = AgentBounds()
ANY_CHOICE = AgentBounds(frozenset(SETTABLE))  # operators


def _bound(field: str, value: Any) -> timedelta | None:
    if value is None:
        return None
    try:
        delta = parse_duration(value)
    except ValueError as exc:
        raise ValidationError(field, str(exc)) from None
    if delta <= timedelta(0):
        raise ValidationError(field, "must be positive")
    return delta


def parse_bounds(data: Mapping[str, Any]) -> AgentBounds:
    """`agent_may_set`, `max_timeout`, `min_timeout` of a configured policy (ValidationError
    names the key). Letting the agent set the timeout needs an explicit `max_timeout`."""
    keys = data.get("agent_may_set", [])
    if not isinstance(keys, list | tuple) or not all(isinstance(k, str) for k in keys):
        raise ValidationError("agent_may_set", f"must be a list of policy keys ({', '.join(SETTABLE)})")
    for i, key in enumerate(keys):
        if key not in SETTABLE:
            raise ValidationError(f"agent_may_set[{i}]", f"{key!r} is not a policy key ({', '.join(SETTABLE)})")
    bounds = AgentBounds(
        frozenset(keys), _bound("max_timeout", data.get("max_timeout")), _bound("min_timeout", data.get("min_timeout"))
    )
    if "timeout" in bounds.may_set and bounds.max_timeout is None:
        raise ValidationError("max_timeout", "required when agent_may_set lists timeout")
    if bounds.max_timeout and bounds.min_timeout and bounds.min_timeout > bounds.max_timeout:
        raise ValidationError("min_timeout", "must not be longer than max_timeout")
    return bounds


def check_inline(policy: Policy, mode: str, default: Policy) -> None:
    """Refuse an inline policy that `security.inline_policies` does not allow."""
    if mode == "allow":
        return
    if mode == "deny":
        raise PolicyNotAllowed(
            "policy", 'inline policies are off (security.inline_policies = "deny"): name a configured policy'
        )
    why = '(security.inline_policies = "restrict"): ask an operator for a named policy'
    if policy.on_timeout is OnTimeout.APPROVE:
        raise PolicyNotAllowed("policy.on_timeout", f"an inline policy may not approve on timeout {why}")
    if policy.after_escalation is Outcome.APPROVE:
        raise PolicyNotAllowed("policy.after_escalation", f"an inline policy may not approve on timeout {why}")
    if policy.grants:  # a standing grant outlives the approval: only an operator's policy offers one
        raise PolicyNotAllowed("policy.grants", f"an inline policy may not offer standing grants {why}")
    if policy.quorum < default.quorum:
        raise PolicyNotAllowed(
            "policy.quorum", f"an inline policy may not lower the default policy's quorum of {default.quorum} {why}"
        )
    if default.require_reason and not policy.require_reason:
        raise PolicyNotAllowed(
            "policy.require_reason", f"an inline policy may not drop the default policy's require_reason {why}"
        )


def with_deadline(
    data: Mapping[str, Any], deadline: datetime | None, now: datetime, calendar: Calendar | None = None
) -> dict[str, Any]:
    """The policy fields with `deadline` turned into the timeout it means (checked: future, and
    not given twice). With a `calendar` the timeout is the business time until the deadline: a
    deadline outside the hours falls at the end of the business time before it."""
    out = dict(data)
    if deadline is None:
        return out
    if "timeout" in data:
        raise ValidationError("deadline", "give either deadline or policy.timeout, not both")
    if deadline <= now:
        raise ValidationError("deadline", "must be in the future")
    out["timeout"] = _until(deadline, now, calendar).total_seconds()
    return out


def _until(deadline: datetime, now: datetime, calendar: Calendar | None) -> timedelta:
    if calendar is None:
        return deadline - now
    left = calendar.between(now, deadline)
    if left <= timedelta(0):
        raise ValidationError(
            "deadline", f"no business time of calendar {calendar.name!r} is left before it ({calendar.hours})"
        )
    return left


def exact_timeout(policy: Policy, deadline: datetime | None, now: datetime) -> Policy:
    """`policy` whose timeout lands exactly on `deadline` (seconds as a float lose microseconds)."""
    if deadline is None:
        return policy
    return dataclasses.replace(policy, timeout=_until(deadline, now, policy.calendar))


def choose(
    base: Policy,
    bounds: AgentBounds,
    choices: Mapping[str, Any],
    deadline: datetime | None,
    now: datetime,
) -> Policy:
    """The named policy `base` with the caller's choices, each one allowed by `bounds`."""
    if not choices and deadline is None:
        return base
    allowed = ", ".join(sorted(bounds.may_set)) or "nothing"
    for key in choices:
        if key not in bounds.may_set:
            raise PolicyNotAllowed(
                f"policy.{key}", f"policy {base.name!r} does not let the agent set it (agent_may_set: {allowed})"
            )
    if deadline is not None and "timeout" not in bounds.may_set:
        raise PolicyNotAllowed(
            "deadline", f"policy {base.name!r} does not let the agent set its timeout (agent_may_set: {allowed})"
        )
    data = {k: v for k, v in base.to_json().items() if k != "name"}
    calendars = {}
    if base.calendar is not None:  # the operator's calendar, named (the agent cannot set it)
        data["calendar"] = base.calendar.name
        calendars[base.calendar.name] = base.calendar
    if deadline is not None:
        del data["timeout"]  # the deadline replaces the policy's own timeout
    data = with_deadline(data | dict(choices), deadline, now, base.calendar)
    policy = parse_policy(data, name=base.name, prefix="policy.", calendars=calendars)
    policy = exact_timeout(policy, deadline, now)
    if "timeout" in choices or deadline is not None:
        _check_timeout(policy, bounds, "deadline" if deadline is not None else "policy.timeout")
    return policy


def _check_timeout(policy: Policy, bounds: AgentBounds, field: str) -> None:
    high, low = bounds.max_timeout, bounds.min_timeout
    if high is not None and (policy.timeout is None or policy.timeout > high):
        raise PolicyNotAllowed(field, f"policy {policy.name!r} allows a timeout of at most {format_duration(high)}")
    if low is not None and policy.timeout is not None and policy.timeout < low:
        raise PolicyNotAllowed(field, f"policy {policy.name!r} needs a timeout of at least {format_duration(low)}")


__all__ = [
    "ANY_CHOICE",
    "BOUND_KEYS",
    "INLINE_MODES",
    "NO_CHOICE",
    "SETTABLE",
    "AgentBounds",
    "check_inline",
    "choose",
    "exact_timeout",
    "parse_bounds",
    "with_deadline",
]
