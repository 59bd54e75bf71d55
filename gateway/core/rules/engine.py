"""Compile a rule set once at start; evaluate it per suspend, purely, with `now` given.

The first enforced rule that matches decides; shadow rules that match before it are returned as
what they would have done; without a match, `rules.default` applies.

A condition that fails at evaluation (a missing field, a type mismatch) never crashes a suspend
and never lets one through: the evaluation stops there and a person decides (`ask`, or `deny`
when `rules.default` is deny), and the error is in the result. Treating the error as "no match"
would be unsafe: a `deny` rule that failed on an odd body would hand the suspend to a later
`allow`. A failing shadow rule is recorded and skipped: it never changes an outcome. Guard
optional fields with `has(args.x)` to make a rule total.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from gateway.core.errors import ConfigError
from gateway.core.rules.cedar import CedarPolicies
from gateway.core.rules.cel import CelEnv, EvalError, activation_facts
from gateway.core.rules.model import (
    CounterKey,
    Counters,
    Facts,
    Mode,
    Rule,
    RuleEngine,
    RuleError,
    RuleOutcome,
    RuleResult,
    ShadowHit,
    rules_hash,
)

RULE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass(frozen=True, slots=True)
class RuleSet:
    """The compiled `[rules]` and `[[rule]]`s: immutable, shared by every suspend."""

    rules: tuple[Rule, ...] = ()
    default: RuleOutcome = RuleOutcome.ASK
    timezone: str = "UTC"
    engine: RuleEngine = RuleEngine.CEL
    cedar: str = ""
    hash: str = ""
    counters: frozenset[CounterKey] = frozenset()  # every spent()/count() the rules read
    programs: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    masks: tuple[Any, ...] = field(default=(), compare=False, repr=False)  # every condition at once
    cel_env: CelEnv | None = field(default=None, compare=False, repr=False)
    cedar_policies: CedarPolicies | None = field(default=None, compare=False, repr=False)

    @property
    def active(self) -> bool:
        """Whether anything is configured (else every suspend asks, as before rules)."""
        return bool(self.rules) or self.cedar_policies is not None or self.default is not RuleOutcome.ASK


def compile_rules(
    rules: Sequence[Rule],
    *,
    default: RuleOutcome = RuleOutcome.ASK,
    timezone: str = "UTC",
    engine: RuleEngine = RuleEngine.CEL,
    cedar: str = "",
) -> RuleSet:
    """Check and compile every rule; a ConfigError names the first bad one (`rule.NAME.when`)."""
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError("rules.timezone", f"unknown time zone {timezone!r}") from None
    del zone
    _check_names(rules)
    digest = rules_hash(engine, default, timezone, tuple(rules), cedar)
    base = RuleSet(tuple(rules), default, timezone, engine, cedar, digest)
    if engine is RuleEngine.CEDAR:
        if rules:
            raise ConfigError(
                f"rule.{rules[0].name}", 'with rules.engine = "cedar", write Cedar policies in rules.cedar'
            )
        policies = CedarPolicies(cedar) if cedar.strip() else None
        return replace(base, cedar_policies=policies)
    if cedar.strip():
        raise ConfigError("rules.cedar", 'Cedar policies need rules.engine = "cedar"')
    if not rules:
        return base  # the optional CEL library is not needed
    env = CelEnv()
    programs: list[Any] = []
    counters: set[CounterKey] = set()
    for rule in rules:
        try:
            program, keys = env.compile(rule.when)
        except ValueError as exc:
            raise ConfigError(f"rule.{rule.name}.when", str(exc)) from None
        programs.append(program)
        counters |= keys
    masks = env.compile_masks([rule.when for rule in rules])
    return replace(base, counters=frozenset(counters), programs=tuple(programs), masks=masks, cel_env=env)


def _check_names(rules: Sequence[Rule]) -> None:
    seen: set[str] = set()
    for i, rule in enumerate(rules):
        if not RULE_NAME.match(rule.name):
            raise ConfigError(f"rule[{i}].name", f"{rule.name!r}: 1-64 characters of A-Z, a-z, 0-9, _ . -")
        if rule.name in seen:
            raise ConfigError(f"rule.{rule.name}", "two rules have this name")
        seen.add(rule.name)


def evaluate(ruleset: RuleSet, facts: Facts, counters: Counters, now: datetime) -> RuleResult:
    """The outcome for one suspend. Pure and synchronous: `now` and `counters` are given."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    if ruleset.cedar_policies is not None:
        return _cedar(ruleset, ruleset.cedar_policies, facts)
    if ruleset.cel_env is None:
        return RuleResult(ruleset.default, None, ruleset.hash)
    env = ruleset.cel_env
    local = now.astimezone(ZoneInfo(ruleset.timezone))
    act = env.activation(activation_facts(facts.agent, facts.run_id, facts.step, facts.args, facts.context, local))
    agent = facts.agent.lower()
    shadow: list[ShadowHit] = []
    errors: list[RuleError] = []
    # Every condition in one call; where one fails, rule by rule, which says which and stops there.
    held = env.run_masks(ruleset.masks, act, counters)
    for i, (rule, program) in enumerate(zip(ruleset.rules, ruleset.programs, strict=True)):
        if rule.agents and agent not in rule.agents:
            continue
        try:
            matched = held[i] if held is not None else env.run(program, act, counters)
        except EvalError as exc:
            errors.append(RuleError(rule.name, str(exc)))
            if rule.mode is Mode.SHADOW:
                continue
            return _failed(ruleset, tuple(shadow), tuple(errors))
        if not matched:
            continue
        if rule.mode is Mode.SHADOW:
            shadow.append(ShadowHit(rule.name, rule.then, rule.reason))
            continue
        return RuleResult(
            rule.then, rule.name, ruleset.hash, rule.reason, rule.policy, rule.channels, rule.approvers,
            tuple(shadow), tuple(errors),
        )  # fmt: skip
    return RuleResult(ruleset.default, None, ruleset.hash, shadow=tuple(shadow), errors=tuple(errors))


def _failed(ruleset: RuleSet, shadow: tuple[ShadowHit, ...], errors: tuple[RuleError, ...]) -> RuleResult:
    outcome = RuleOutcome.DENY if ruleset.default is RuleOutcome.DENY else RuleOutcome.ASK
    reason = f"rule {errors[-1].rule} could not be evaluated: {errors[-1].message}"
    return RuleResult(outcome, None, ruleset.hash, reason, shadow=shadow, errors=errors, failed=True)


def _cedar(ruleset: RuleSet, policies: CedarPolicies, facts: Facts) -> RuleResult:
    answer = policies.decide(facts.agent.lower(), facts.step, facts.run_id, facts.args)
    errors = tuple(RuleError("cedar", e) for e in answer.errors)
    if answer.effect == "forbid":
        outcome = RuleOutcome.DENY
    elif answer.effect == "permit" and not errors:
        outcome = RuleOutcome.ALLOW
    else:  # no decision, or a permit while a policy failed (a forbid that errored might have applied)
        outcome = RuleOutcome.ASK
    rule = answer.policies[0] if answer.policies and outcome is not RuleOutcome.ASK else None
    failed = outcome is RuleOutcome.ASK and bool(errors)
    return RuleResult(outcome, rule, ruleset.hash, answer.reason if rule else "", errors=errors, failed=failed)


__all__ = ["RULE_NAME", "RuleSet", "compile_rules", "evaluate"]
