"""`[rules]` (default, timezone, engine, cedar) and the `[[rule]]` tables, compiled at load.

The tables are TOML's array of tables, in order (the first match wins). Every key is checked:
an unknown one or a bad value is a ConfigError naming the rule and the key, and a condition that
does not compile stops the start with one line naming the rule (`gateway.core.rules`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from gateway.core.errors import ConfigError
from gateway.core.principals import NAME_RE, NAME_RULE
from gateway.core.rules import Mode, Rule, RuleEngine, RuleOutcome, RuleSet, compile_rules
from gateway.settings.coerce import Coerce, coerce_all, string, strings

E = TypeVar("E", RuleOutcome, Mode, RuleEngine)


def _choice(kind: type[E]) -> Coerce:
    def coerce(key: str, v: Any) -> E:
        text = string(key, v).strip().lower()
        try:
            return kind(text)
        except ValueError:
            raise ConfigError(key, f"expected one of {', '.join(kind)}, got {v!r}") from None

    return coerce


def agent_names(key: str, v: Any) -> tuple[str, ...]:
    """Agent names, case-insensitive, bare or as the CEL fact spells them (`agent:billing`): a
    spelling that matched no agent would switch the rule off without a word, a deny included."""
    out = []
    for i, name in enumerate(strings(key, v)):
        bare = name[len("agent:") :] if name[:6].lower() == "agent:" else name
        if not NAME_RE.match(bare):
            raise ConfigError(f"{key}[{i}]", f"{name!r}: an agent name (or agent:NAME) is {NAME_RULE}")
        out.append(bare.lower())
    return tuple(out)


KEYS: dict[str, Coerce] = {
    "default": _choice(RuleOutcome),
    "timezone": string,
    "engine": _choice(RuleEngine),
    "cedar": string,
}
RULE_KEYS: dict[str, Coerce] = {
    "name": string,
    "when": string,
    "then": _choice(RuleOutcome),
    "reason": string,
    "policy": string,
    "channels": strings,
    "approvers": strings,
    "mode": _choice(Mode),
    "agents": agent_names,
}
_REQUIRED = ("name", "when", "then")


def load_rules(section: Mapping[str, Any], tables: Any, *, compile: bool = True) -> RuleSet:
    """The RuleSet from the coerced `[rules]` and the raw `[[rule]]` list. `compile=False` (the
    agent-side commands) checks nothing and needs no rule library."""
    rules = parse_rules(tables)
    if not compile:
        return RuleSet()
    return compile_rules(rules, **section)


def parse_rules(tables: Any) -> list[Rule]:
    if not isinstance(tables, list):
        raise ConfigError("rule", "expected [[rule]] tables (an array of tables)")
    rules = []
    for i, table in enumerate(tables):
        name = table.get("name") if isinstance(table, dict) else None
        where = f"rule.{name}" if isinstance(name, str) and name else f"rule[{i}]"
        values = coerce_all(where, table, RULE_KEYS)
        for key in _REQUIRED:
            if key not in values:
                raise ConfigError(f"{where}.{key}", "missing")
        rules.append(Rule(**values))
    return rules


def check_rules(ruleset: RuleSet, policies: Iterable[str], enabled: Iterable[str]) -> None:
    """A rule routes only to a policy that exists and to channels that are on."""
    names, kinds = frozenset(policies), frozenset(enabled)
    for rule in ruleset.rules:
        if rule.policy is not None and rule.policy not in names:
            raise ConfigError(f"rule.{rule.name}.policy", f"no policy named {rule.policy!r}")
        for target in rule.channels:
            if target.split(":", 1)[0] not in kinds:
                raise ConfigError(f"rule.{rule.name}.channels", f"channel {target!r} is not enabled")


__all__ = ["KEYS", "RULE_KEYS", "check_rules", "load_rules", "parse_rules"]
