"""The records of the rules: what an operator wrote (`Rule`), what a suspend brings (`Facts`), the
counters a budget reads (`Counters`), and what the evaluation answers (`RuleResult`).

Every record is frozen: a rule set is compiled once at start and shared by every request.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import Any, Protocol


class RuleOutcome(StrEnum):
    ALLOW = "allow"  # approved at once, decided_by "rule:NAME"
    DENY = "deny"  # rejected at once, with the rule's reason
    ASK = "ask"  # a person decides, as before rules, routed by the rule


class Mode(StrEnum):
    ENFORCE = "enforce"
    SHADOW = "shadow"  # evaluated and recorded ("would allow"), never applied


class RuleEngine(StrEnum):
    CEL = "cel"
    CEDAR = "cedar"


@dataclass(frozen=True, slots=True)
class Rule:
    """One `[[rule]]` table, as the operator wrote it (its condition is compiled into the RuleSet)."""

    name: str
    when: str
    then: RuleOutcome
    reason: str = ""
    # Routing, for `ask`: a named policy, the channels that replace the agent's, approvers that narrow.
    policy: str | None = None
    channels: tuple[str, ...] = ()
    approvers: tuple[str, ...] = ()
    mode: Mode = Mode.ENFORCE
    agents: tuple[str, ...] = ()  # agent names (lower case); empty: every agent


@dataclass(frozen=True, slots=True)
class CounterKey:
    """One budget a rule reads: `spent(field, window)` (field set) or `count(window)` (field None)."""

    field: str | None
    window: timedelta


class Counters(Protocol):
    """What was approved or allowed for the suspending agent, over a trailing window ending now.

    Synchronous on purpose: the caller reads `RuleSet.counters` (every key the rules use) inside
    the transaction that will record the decision, then hands the numbers in (`CounterSnapshot`),
    so two suspends at once cannot both slip under one budget."""

    def spent(self, field: str, window: timedelta) -> int | float: ...

    def count(self, window: timedelta) -> int: ...


@dataclass(frozen=True, slots=True)
class CounterSnapshot:
    """Counters read beforehand, one number per CounterKey; a key not read counts as 0."""

    values: Mapping[CounterKey, int | float] = field(default_factory=dict)

    def spent(self, field: str, window: timedelta) -> int | float:
        return self.values.get(CounterKey(field, window), 0)

    def count(self, window: timedelta) -> int:
        return int(self.values.get(CounterKey(None, window), 0))


NO_COUNTERS = CounterSnapshot()


@dataclass(frozen=True, slots=True)
class Facts:
    """What a suspend tells the rules. `context` is the agent's own say: untrusted, like `args`."""

    agent: str  # the agent's name; the CEL fact `agent` is "agent:NAME"
    step: str
    run_id: str = ""
    args: Mapping[str, Any] = field(default_factory=dict)
    context: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ShadowHit:
    """A shadow rule that matched before the deciding one: what it would have done."""

    rule: str
    outcome: RuleOutcome
    reason: str = ""


@dataclass(frozen=True, slots=True)
class RuleError:
    """A condition that failed at evaluation (a missing field, a type mismatch): never a crash."""

    rule: str
    message: str


@dataclass(frozen=True, slots=True)
class RuleResult:
    outcome: RuleOutcome
    rule: str | None  # the enforced rule that decided; None: rules.default (or an error, see errors)
    rules_hash: str
    reason: str = ""
    policy: str | None = None
    channels: tuple[str, ...] = ()
    approvers: tuple[str, ...] = ()
    shadow: tuple[ShadowHit, ...] = ()
    errors: tuple[RuleError, ...] = ()
    # An enforced condition could not be evaluated, so a person decides: not the default's
    # `ask`, which a standing grant may answer (a deny that failed might have applied).
    failed: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (CLI `rules test`, `POST /v1/rules/evaluate`, event data)."""
        return {
            "outcome": str(self.outcome),
            "rule": self.rule,
            "reason": self.reason,
            "policy": self.policy,
            "channels": list(self.channels),
            "approvers": list(self.approvers),
            "shadow": [{"rule": h.rule, "outcome": str(h.outcome), "reason": h.reason} for h in self.shadow],
            "errors": [{"rule": e.rule, "message": e.message} for e in self.errors],
            "rules_hash": self.rules_hash,
        }


def rules_hash(engine: RuleEngine, default: RuleOutcome, timezone: str, rules: tuple[Rule, ...], cedar: str) -> str:
    """sha256 of the rule set's canonical JSON: the same rules give the same hash on every start
    and every replica, whatever the key order in the file."""
    body = {
        "engine": str(engine),
        "default": str(default),
        "timezone": timezone,
        "rules": [{k: (str(v) if isinstance(v, StrEnum) else v) for k, v in asdict(r).items()} for r in rules],
        "cedar": cedar,
    }
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


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
    "ShadowHit",
    "rules_hash",
]
