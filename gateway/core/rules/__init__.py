"""Rules: the gateway decides, at suspend, whether a person is needed (allow, deny or ask).

`compile_rules` once at start (a bad condition is a ConfigError naming the rule), then
`evaluate(ruleset, facts, counters, now)` per suspend: pure, synchronous, never raising on the
agent's input. Conditions are CEL (`gateway.core.rules.cel`) or, with `rules.engine = "cedar"`,
a Cedar policy set (`gateway.core.rules.cedar`). The libraries are optional extras, imported only
when a rule set needs them.
"""

from __future__ import annotations

from gateway.core.rules.body import facts_from_body
from gateway.core.rules.engine import RuleSet, compile_rules, evaluate
from gateway.core.rules.model import (
    NO_COUNTERS,
    CounterKey,
    Counters,
    CounterSnapshot,
    Facts,
    Mode,
    Rule,
    RuleEngine,
    RuleError,
    RuleOutcome,
    RuleResult,
    ShadowHit,
)

__all__ = [
    "NO_COUNTERS",
    "CounterKey",
    "CounterSnapshot",
    "Counters",
    "Facts",
    "Mode",
    "Rule",
    "RuleEngine",
    "RuleError",
    "RuleOutcome",
    "RuleResult",
    "RuleSet",
    "ShadowHit",
    "compile_rules",
    "evaluate",
    "facts_from_body",
]
