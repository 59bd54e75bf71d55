"""Which policy a suspend gets: a named one, a named one with the agent's bounded choices, or an
inline one as `security.inline_policies` allows (the pure rules are in gateway.core.policy_bounds).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from gateway.core.errors import PolicyNotAllowed, UnknownPolicy, ValidationError
from gateway.core.models import Policy
from gateway.core.policy import parse_policy
from gateway.core.policy_bounds import (
    ANY_CHOICE,
    NO_CHOICE,
    AgentBounds,
    check_inline,
    choose,
    exact_timeout,
    with_deadline,
)
from gateway.core.principals import Principal
from gateway.settings import Settings

PolicyValue = str | Policy | Mapping[str, Any] | None


def resolve_policy(
    settings: Settings,
    value: PolicyValue,
    *,
    deadline: datetime | None = None,
    principal: Principal | None = None,
    now: datetime,
) -> Policy:
    """The policy for a suspend's `policy` (and `deadline`), or PolicyNotAllowed (403),
    ValidationError (400) or UnknownPolicy (400) naming the field. Operators are trusted with
    policies; every other caller (agents, in-process callers) is held to the config."""
    trusted = principal is not None and principal.is_operator
    if isinstance(value, Policy):  # built in process: an inline policy
        if deadline is not None:
            with_deadline({}, deadline, now, value.calendar)  # checks that it is in the future
            value = exact_timeout(value, deadline, now)
        return _inline(settings, value, trusted)
    if isinstance(value, Mapping):
        name = value.get("name")
        if isinstance(name, str) and name in settings.policies:  # the named policy, with choices
            check_named(settings, name, principal, "policy.name")
            choices = {k: v for k, v in value.items() if k != "name"}
            return choose(settings.policies[name], _bounds(settings, name, trusted), choices, deadline, now)
        calendars = settings.calendars
        named_calendar = value.get("calendar")
        calendar = calendars.get(named_calendar) if isinstance(named_calendar, str) else None
        data = with_deadline(value, deadline, now, calendar)
        policy = parse_policy(data, name="inline", prefix="policy.", calendars=calendars)
        return _inline(settings, exact_timeout(policy, deadline, now), trusted)
    if value is not None and not isinstance(value, str):
        raise ValidationError("policy", "must be a policy name or an inline policy object")
    name = value or "default"
    base = settings.policies.get(name)
    if base is None:
        raise UnknownPolicy(f"policy: unknown policy {name!r}", policy=name)
    check_named(settings, name, principal, "policy")
    return choose(base, _bounds(settings, name, trusted), {}, deadline, now)


def check_named(settings: Settings, name: str, principal: Principal | None, field: str) -> None:
    """PolicyNotAllowed (403) when an agent given `policies` in `[security.agents]` asks for a
    named policy not in that list. `default` is always allowed: it is what a suspend that names no
    policy gets, so naming it changes nothing; operators and in-process callers are not agents."""
    if principal is None or principal.is_operator or name == "default":
        return
    allowed = settings.security.agent_policies.get(principal.name)
    if allowed is not None and name not in allowed:
        listed = ", ".join(allowed) or "none"
        raise PolicyNotAllowed(
            field,
            f"agent {principal.name!r} may not ask for policy {name!r}"
            f" (security.agents.{principal.name}.policies: {listed}; default is always allowed)",
        )


def settable(settings: Settings, name: str, principal: Principal | None) -> frozenset[str] | None:
    """The keys of the configured policy `name` that the caller's request may change (its
    `agent_may_set`; every settable key for operators), or None when `name` is no configured
    policy (an inline one: all of it is the request's). The rest of a named policy is the
    operator's config, which may change while an approval waits."""
    if name not in settings.policies:
        return None
    return _bounds(settings, name, principal is not None and principal.is_operator).may_set


def _bounds(settings: Settings, name: str, trusted: bool) -> AgentBounds:
    return ANY_CHOICE if trusted else settings.policy_bounds.get(name, NO_CHOICE)


def _inline(settings: Settings, policy: Policy, trusted: bool) -> Policy:
    if not trusted:
        check_inline(policy, settings.security.inline_policies, settings.policies["default"])
    return policy


__all__ = ["PolicyValue", "check_named", "resolve_policy", "settable"]
