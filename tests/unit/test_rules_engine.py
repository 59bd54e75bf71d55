"""gateway.core.rules on CEL: outcomes, first match, shadow, scope, time, errors, hash, budgets."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import pytest

from gateway.core.errors import ConfigError
from gateway.core.rules import (
    NO_COUNTERS,
    CounterKey,
    CounterSnapshot,
    Facts,
    Mode,
    Rule,
    RuleOutcome,
    compile_rules,
    evaluate,
)

NOW = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)  # a Monday; 10:30 in Madrid
SMALL_WHEN = 'step == "charge" && args.currency == "EUR" && args.amount < 5000'
SMALL = Rule("small-charges", SMALL_WHEN, RuleOutcome.ALLOW, "under 50 EUR")
LARGE = Rule(
    "large-charges", 'step == "charge" && args.amount >= 1000000', RuleOutcome.ASK, policy="finance-two",
    channels=("slack:C0FINANCE",), approvers=("operator:cfo",),
)  # fmt: skip
BLOCK = Rule("no-deploys", 'step == "deploy"', RuleOutcome.DENY, "frozen")


def charge(amount: object, currency: str = "EUR", agent: str = "billing") -> Facts:
    return Facts(agent=agent, step="charge", run_id="r1", args={"amount": amount, "currency": currency})


@dataclass
class Ledger:
    """A tiny in-memory Counters: what was approved, when, per agent (the input evaluate reads)."""

    now: datetime
    entries: list[tuple[datetime, dict[str, float]]] = field(default_factory=list)

    def spent(self, field: str, window: timedelta) -> int | float:
        return sum(e[field] for at, e in self.entries if at > self.now - window and field in e)

    def count(self, window: timedelta) -> int:
        return sum(1 for at, _ in self.entries if at > self.now - window)


def test_each_outcome_and_the_default() -> None:
    rs = compile_rules([SMALL, LARGE, BLOCK])
    allowed = evaluate(rs, charge(4200), NO_COUNTERS, NOW)
    assert (allowed.outcome, allowed.rule, allowed.reason) == (RuleOutcome.ALLOW, "small-charges", "under 50 EUR")
    asked = evaluate(rs, charge(2_000_000), NO_COUNTERS, NOW)
    assert (asked.outcome, asked.rule, asked.policy) == (RuleOutcome.ASK, "large-charges", "finance-two")
    assert asked.channels == ("slack:C0FINANCE",) and asked.approvers == ("operator:cfo",)
    denied = evaluate(rs, Facts("billing", "deploy"), NO_COUNTERS, NOW)
    assert (denied.outcome, denied.rule, denied.reason) == (RuleOutcome.DENY, "no-deploys", "frozen")
    middle = evaluate(rs, charge(50_000), NO_COUNTERS, NOW)
    assert (middle.outcome, middle.rule) == (RuleOutcome.ASK, None)
    assert (
        evaluate(compile_rules([SMALL], default=RuleOutcome.DENY), charge(50_000), NO_COUNTERS, NOW).outcome == "deny"
    )
    assert allowed.rules_hash == rs.hash and len(rs.hash) == 64


def test_the_first_matching_rule_wins() -> None:
    everything = Rule("all-charges", 'step == "charge"', RuleOutcome.DENY, "no charges")
    assert evaluate(compile_rules([SMALL, everything]), charge(10), NO_COUNTERS, NOW).rule == "small-charges"
    assert evaluate(compile_rules([everything, SMALL]), charge(10), NO_COUNTERS, NOW).rule == "all-charges"


def test_shadow_rules_are_reported_not_applied() -> None:
    shadow = Rule("try-allow", 'step == "charge"', RuleOutcome.ALLOW, "trial", mode=Mode.SHADOW)
    late = Rule("late-shadow", "true", RuleOutcome.DENY, mode=Mode.SHADOW)
    rs = compile_rules([shadow, LARGE, late])
    result = evaluate(rs, charge(2_000_000), NO_COUNTERS, NOW)
    assert (result.outcome, result.rule) == (RuleOutcome.ASK, "large-charges")
    assert [(h.rule, h.outcome, h.reason) for h in result.shadow] == [("try-allow", RuleOutcome.ALLOW, "trial")]
    alone = evaluate(rs, charge(10), NO_COUNTERS, NOW)  # no enforced match: the default, both shadows seen
    assert (alone.outcome, alone.rule) == (RuleOutcome.ASK, None)
    assert [h.rule for h in alone.shadow] == ["try-allow", "late-shadow"]


def test_shadow_rules_change_no_outcome() -> None:
    plain = compile_rules([SMALL, LARGE, BLOCK])
    shadowed = compile_rules([Rule("s", "true", RuleOutcome.ALLOW, mode=Mode.SHADOW), SMALL, LARGE, BLOCK])
    for facts in (charge(10), charge(10**7), charge(9000), Facts("billing", "deploy"), Facts("x", "other")):
        a, b = evaluate(plain, facts, NO_COUNTERS, NOW), evaluate(shadowed, facts, NO_COUNTERS, NOW)
        assert (a.outcome, a.rule, a.reason) == (b.outcome, b.rule, b.reason)


def test_agents_scope_a_rule() -> None:
    scoped = Rule("billing-only", 'step == "charge"', RuleOutcome.ALLOW, agents=("billing",))
    rs = compile_rules([scoped])
    assert evaluate(rs, charge(10, agent="billing"), NO_COUNTERS, NOW).outcome == RuleOutcome.ALLOW
    assert evaluate(rs, charge(10, agent="Billing"), NO_COUNTERS, NOW).outcome == RuleOutcome.ALLOW  # names fold
    assert evaluate(rs, charge(10, agent="payroll"), NO_COUNTERS, NOW).outcome == RuleOutcome.ASK


def test_agent_fact_is_the_identity() -> None:
    rs = compile_rules([Rule("me", 'agent == "agent:billing" && run_id == "r1"', RuleOutcome.ALLOW)])
    assert evaluate(rs, charge(1), NO_COUNTERS, NOW).outcome == RuleOutcome.ALLOW
    assert evaluate(rs, charge(1, agent="other"), NO_COUNTERS, NOW).outcome == RuleOutcome.ASK


def test_hour_and_weekday_in_the_rules_timezone() -> None:
    office = Rule("office-hours", "hour >= 9 && hour < 18 && weekday >= 1 && weekday <= 5", RuleOutcome.ALLOW)
    madrid = compile_rules([office], timezone="Europe/Madrid")
    tokyo = compile_rules([office], timezone="Asia/Tokyo")  # 18:30 there
    assert evaluate(madrid, charge(1), NO_COUNTERS, NOW).outcome == RuleOutcome.ALLOW
    assert evaluate(tokyo, charge(1), NO_COUNTERS, NOW).outcome == RuleOutcome.ASK
    sunday = NOW + timedelta(days=6)
    assert evaluate(madrid, charge(1), NO_COUNTERS, sunday).outcome == RuleOutcome.ASK
    weekday = compile_rules([Rule("sun", "weekday == 0 && now > timestamp('2026-01-01T00:00:00Z')", RuleOutcome.DENY)])
    assert evaluate(weekday, charge(1), NO_COUNTERS, sunday).outcome == RuleOutcome.DENY
    with pytest.raises(ValueError, match="timezone-aware"):
        evaluate(madrid, charge(1), NO_COUNTERS, NOW.replace(tzinfo=None))


def test_budgets_read_the_counters() -> None:
    budget = Rule("daily-budget", 'spent("amount", "24h") + args.amount > 20000', RuleOutcome.DENY, "over budget")
    burst = Rule("burst", 'count("1h") > 2', RuleOutcome.ASK, "many at once")
    rs = compile_rules([budget, burst, Rule("rest", "true", RuleOutcome.ALLOW)])
    assert rs.counters == {CounterKey("amount", timedelta(hours=24)), CounterKey(None, timedelta(hours=1))}
    old, recent = (NOW - timedelta(hours=30), {"amount": 50_000}), (NOW - timedelta(hours=2), {"amount": 15_000})
    ledger = Ledger(NOW, [old, recent])
    assert (
        evaluate(rs, charge(4000), ledger, NOW).outcome == RuleOutcome.ALLOW
    )  # 15000 + 4000 (the 30 h old one is out)
    assert evaluate(rs, charge(6000), ledger, NOW).rule == "daily-budget"
    ledger.entries += [(NOW - timedelta(minutes=m), {"amount": 1}) for m in (1, 2, 3)]
    assert evaluate(rs, charge(10), ledger, NOW).rule == "burst"
    snapshot = CounterSnapshot({CounterKey("amount", timedelta(days=1)): 19_999})
    assert evaluate(rs, charge(2), snapshot, NOW).rule == "daily-budget"


@pytest.mark.parametrize(
    ("when", "problem"),
    [
        ('stpe == "charge"', "undeclared reference to 'stpe'"),
        ('step == "charge" &&', "Syntax error"),
        ("args.amount + 1", "true/false condition"),
        ('spent("amount") > 1', "spent"),
        ('spent("amount", "1 fortnight") > 1', "window '1 fortnight'"),
        ("count(step) > 1", "literal strings"),
        ("args.items.all(x, args.items.exists(y, y == x))", "may not contain another"),
        ("", "empty"),
        ("true || " * 600 + "true", "longer than"),
    ],
)
def test_a_bad_condition_names_the_rule(when: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        compile_rules([SMALL, Rule("bad-one", when, RuleOutcome.ALLOW)])
    assert info.value.key == "rule.bad-one.when"
    assert problem in info.value.problem and "\n" not in info.value.message


def test_bad_names_and_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="two rules have this name"):
        compile_rules([SMALL, SMALL])
    with pytest.raises(ConfigError, match=r"rule\[0\]\.name"):
        compile_rules([Rule("has space", "true", RuleOutcome.ALLOW)])
    with pytest.raises(ConfigError, match=r"rules\.timezone"):
        compile_rules([SMALL], timezone="Mars/Olympus")


def test_sequential_comprehensions_are_fine() -> None:
    rs = compile_rules([Rule("both", 'args.items.all(x, x > 0) && args.tags.exists(t, t == "ok")', RuleOutcome.ALLOW)])
    facts = Facts("billing", "charge", args={"items": [1, 2], "tags": ["ok"]})
    assert evaluate(rs, facts, NO_COUNTERS, NOW).outcome == RuleOutcome.ALLOW


def test_an_error_at_evaluation_asks_and_is_recorded() -> None:
    deny_big = Rule("deny-big", "args.amount > 100000", RuleOutcome.DENY)
    allow_charges = Rule("allow-charges", 'step == "charge"', RuleOutcome.ALLOW)
    rs = compile_rules([deny_big, allow_charges])
    for args in ({}, {"amount": "lots"}, {"amount": [1]}):  # missing field, wrong types
        result = evaluate(rs, Facts("billing", "charge", args=args), NO_COUNTERS, NOW)
        assert (result.outcome, result.rule) == (RuleOutcome.ASK, None)  # never the later allow
        assert [e.rule for e in result.errors] == ["deny-big"] and result.errors[0].message
        assert "deny-big" in result.reason
    strict = compile_rules([deny_big, allow_charges], default=RuleOutcome.DENY)
    assert evaluate(strict, Facts("billing", "charge"), NO_COUNTERS, NOW).outcome == RuleOutcome.DENY


def test_has_makes_a_rule_total_and_shadow_errors_are_skipped() -> None:
    guarded = Rule("guarded", "has(args.amount) && args.amount > 100000", RuleOutcome.DENY)
    broken = Rule("broken-shadow", "args.nope == 1", RuleOutcome.DENY, mode=Mode.SHADOW)
    rs = compile_rules([broken, guarded, Rule("allow-charges", 'step == "charge"', RuleOutcome.ALLOW)])
    result = evaluate(rs, Facts("billing", "charge"), NO_COUNTERS, NOW)
    assert (result.outcome, result.rule) == (RuleOutcome.ALLOW, "allow-charges")
    assert [e.rule for e in result.errors] == ["broken-shadow"]


def test_a_counter_that_fails_is_an_error_not_a_crash() -> None:
    class Broken:
        def spent(self, field: str, window: timedelta) -> int:
            raise RuntimeError("store gone")

        def count(self, window: timedelta) -> int:
            return 0

    rs = compile_rules([Rule("budget", 'spent("amount", "1h") > 5', RuleOutcome.ALLOW)])
    result = evaluate(rs, charge(1), Broken(), NOW)
    assert (result.outcome, [e.rule for e in result.errors]) == (RuleOutcome.ASK, ["budget"])


def test_the_hash_is_canonical() -> None:
    a = compile_rules([SMALL, LARGE], timezone="Europe/Madrid")
    assert a.hash == compile_rules([SMALL, LARGE], timezone="Europe/Madrid").hash
    assert a.hash != compile_rules([LARGE, SMALL], timezone="Europe/Madrid").hash  # order matters
    assert a.hash != compile_rules([SMALL, LARGE], timezone="UTC").hash
    assert a.hash != compile_rules([SMALL, LARGE], timezone="Europe/Madrid", default=RuleOutcome.DENY).hash


def test_no_rules_needs_no_library_and_asks() -> None:
    rs = compile_rules([])
    assert not rs.active
    result = evaluate(rs, charge(1), NO_COUNTERS, NOW)
    assert (result.outcome, result.rule, result.rules_hash) == (RuleOutcome.ASK, None, rs.hash)


def test_context_is_a_fact_but_only_when_a_rule_names_it() -> None:
    rs = compile_rules([SMALL])
    sneaky = Facts("billing", "charge", args={"amount": 10**8, "currency": "EUR"}, context={"approved": True})
    assert evaluate(rs, sneaky, NO_COUNTERS, NOW).outcome == RuleOutcome.ASK
    trusting = compile_rules([Rule("ctx", 'has(context.ticket) && context.ticket == "T-1"', RuleOutcome.ALLOW)])
    assert evaluate(trusting, Facts("b", "s", context={"ticket": "T-1"}), NO_COUNTERS, NOW).outcome == RuleOutcome.ALLOW


def test_all_conditions_at_once_decide_as_one_by_one() -> None:
    """The bitmask programs (every condition in one call) give the answer of evaluating each
    rule alone, across a chunk boundary, with shadow rules, agent scopes and a failing rule."""
    rules = [
        Rule(f"r{i}", f'step == "charge" && args.amount > {1000 - i}', RuleOutcome.ALLOW, mode=Mode.SHADOW)
        for i in range(70)
    ]
    rules += [
        Rule("scoped", 'step == "charge"', RuleOutcome.DENY, agents=("other",)),
        Rule("missing", "args.nope > 1", RuleOutcome.ALLOW),
        Rule("last", 'step == "charge"', RuleOutcome.DENY),
    ]
    rs = compile_rules(rules)
    one_by_one = replace(rs, masks=())
    for amount in (0, 935, 990, 2000):
        for args in ({"amount": amount}, {"amount": amount, "nope": 5}):
            facts = Facts(agent="billing", step="charge", args=args)
            assert evaluate(rs, facts, NO_COUNTERS, NOW) == evaluate(one_by_one, facts, NO_COUNTERS, NOW)
    allowed = evaluate(rs, Facts(agent="billing", step="charge", args={"amount": 990, "nope": 5}), NO_COUNTERS, NOW)
    assert allowed.rule == "missing" and len(allowed.shadow) == 59  # r11 to r69
