"""`[policies.NAME]`: the named policies, and what each lets the agent choose (its bounds).

The core's `parse_policy` and `parse_bounds` check a policy; from the environment every value is
a string, so the keys whose type is not a string are coerced first, by the same coercers as every
other section (a string in the file goes the same way).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any

from gateway.core.calendar import Calendar
from gateway.core.errors import ConfigError, ValidationError
from gateway.core.models import Policy
from gateway.core.policy import parse_policy
from gateway.core.policy_bounds import BOUND_KEYS, AgentBounds, parse_bounds
from gateway.settings.coerce import Coerce, boolean, integer, listing

# The keys of a named policy: the fields of `Policy` (its name is the table's) and its bounds.
NAMES = (*(f.name for f in fields(Policy) if f.name != "name"), *BOUND_KEYS)
# From the environment every value is a string: the keys whose type is not one are coerced first
# (the durations and enums are strings already, and the core parses them).
KEYS: dict[str, Coerce] = {
    "escalate_to": listing,
    "remind": listing,
    "agent_may_set": listing,
    "extend": listing,
    "grants": listing,
    "grant_fields": listing,
    "quorum": integer,
    "max_extensions": integer,
    "require_reason": boolean,
}


def load_policies(
    raw: Mapping[str, Any], calendars: Mapping[str, Calendar] | None = None
) -> tuple[dict[str, Policy], dict[str, AgentBounds]]:
    group = raw.get("policies", {})
    if not isinstance(group, dict):
        raise ConfigError("policies", "expected a table of named policies")
    policies: dict[str, Policy] = {"default": Policy()}
    bounds: dict[str, AgentBounds] = {}
    for name, body in group.items():
        if not isinstance(body, dict):
            raise ConfigError(f"policies.{name}", "expected a table")
        body = {k: _coerce(f"policies.{name}.{k}", k, v) for k, v in body.items()}
        try:
            bounds[name] = parse_bounds({k: body.pop(k) for k in BOUND_KEYS if k in body})
            policies[name] = parse_policy(body, name=name, calendars=calendars)
        except ValidationError as exc:
            raise ConfigError(f"policies.{name}.{exc.field}", exc.message.split(": ", 1)[-1]) from None
    return policies, bounds


def _coerce(key: str, name: str, value: Any) -> Any:
    return KEYS[name](key, value) if isinstance(value, str) and name in KEYS else value


def check_escalations(policies: Mapping[str, Policy], enabled: Iterable[str]) -> None:
    """Every channel a policy escalates to is on (an escalation nobody sees is no escalation);
    a `group:NAME` target is people (checked with the other groups named)."""
    kinds = frozenset(enabled)
    for name, policy in policies.items():
        for target in policy.escalate_to:
            if target.split(":", 1)[0] not in kinds and not target.startswith("group:"):
                raise ConfigError(f"policies.{name}.escalate_to", f"channel {target!r} is not enabled")


__all__ = ["KEYS", "NAMES", "check_escalations", "load_policies"]
