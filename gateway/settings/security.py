"""`[security]`: the secret keys that sign tokens, and the principals (agents and operators) with
their bearer keys."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from gateway.core.errors import ConfigError
from gateway.core.policy_bounds import INLINE_MODES
from gateway.core.principals import Principal, Principals, canonical_names, check_principals, principal_entries
from gateway.settings.coerce import Coerce, boolean, duration, string, strings, table


@dataclass(frozen=True, slots=True)
class SecuritySettings:
    secret_keys: tuple[str, ...] = ()
    api_keys: tuple[str, ...] = ()
    token_grace: timedelta = timedelta(days=7)
    token_max_age: timedelta = timedelta(days=30)
    token_decisions: bool = False
    operator_keys: tuple[str, ...] = ()
    agents: Mapping[str, str] = field(default_factory=dict)  # NAME -> key: the principal agent:NAME
    # NAME -> the named policies agent:NAME may ask for (`policies` in its table); absent: any
    agent_policies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    operators: Mapping[str, str] = field(default_factory=dict)  # NAME -> key: operator:NAME
    inline_policies: str = "restrict"  # restrict | deny | allow (gateway.core.policy_bounds)

    def principal_keys(self) -> list[tuple[Principal, str]]:
        """Every key with its principal (gateway.core.principals.principal_entries)."""
        return principal_entries(self.agents, self.operators, self.api_keys, self.operator_keys)

    def principals(self) -> Principals:
        return Principals(self.principal_keys())

    @property
    def keys(self) -> list[str]:
        """Every bearer key (for the log redactor)."""
        return [k for _, k in self.principal_keys()]


def agents_table(key: str, v: Any) -> dict[str, str]:
    """`[security.agents]`: NAME -> its key, from `NAME = "key"` or from a table
    `NAME = { key = "...", policies = [...] }` (the policies: `agent_policies`)."""
    if not isinstance(v, dict):
        return principals_table(key, v)  # also the environment's 'name=key,name=key'
    return canonical_names(key, {str(name): _agent_key(f"{key}.{name}", entry) for name, entry in v.items()})


def principals_table(key: str, v: Any) -> dict[str, str]:
    """NAME -> key, with NAME canonical (lower case; two spellings of one name refused)."""
    return canonical_names(key, table(key, v))


def _agent_key(key: str, entry: Any) -> str:
    if not isinstance(entry, dict):
        return string(key, entry)
    for name in entry:
        if name not in ("key", "policies"):
            raise ConfigError(f"{key}.{name}", "unknown key (known: key, policies)")
    if "key" not in entry:
        raise ConfigError(f"{key}.key", "required: the agent's API key")
    return string(f"{key}.key", entry["key"])


def agent_policies(raw: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Each agent's `policies` list, for the agents given as tables that name one."""
    section = raw.get("security", {})
    agents = section.get("agents", {}) if isinstance(section, dict) else {}
    if not isinstance(agents, dict):
        return {}  # the environment's 'name=key' form, which names no policies
    named = {
        str(name): strings(f"security.agents.{name}.policies", entry["policies"])
        for name, entry in agents.items()
        if isinstance(entry, dict) and "policies" in entry
    }
    return canonical_names("security.agents", named)


KEYS: dict[str, Coerce] = {
    "secret_keys": strings,
    "api_keys": strings,
    "token_grace": duration,
    "token_max_age": duration,
    "token_decisions": boolean,
    "operator_keys": strings,
    "agents": agents_table,
    "operators": principals_table,
    "inline_policies": string,
}


def check_security(sec: SecuritySettings, policies: Mapping[str, object]) -> None:
    if not sec.secret_keys:
        raise ConfigError("security.secret_keys", "must list at least one key (newest last)")
    for i, key in enumerate(sec.secret_keys):
        if len(key) < 16:
            raise ConfigError(f"security.secret_keys[{i}]", "must be at least 16 characters")
    check_principals(sec.agents, sec.operators, sec.api_keys, sec.operator_keys)
    if sec.inline_policies not in INLINE_MODES:
        raise ConfigError("security.inline_policies", f"expected one of {', '.join(INLINE_MODES)}")
    # Every policy an agent's `policies` names is configured (a typo would lock the agent out).
    for name, names in sec.agent_policies.items():
        for i, policy in enumerate(names):
            if policy not in policies:
                known = ", ".join(sorted(policies))
                raise ConfigError(
                    f"security.agents.{name}.policies[{i}]", f"unknown policy {policy!r} (known: {known})"
                )


__all__ = ["KEYS", "SecuritySettings", "agent_policies", "agents_table", "check_security"]
