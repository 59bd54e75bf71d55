"""rules.engine = "cedar": the decisions come from cedarpy (the Cedar engine itself), mapped to
allow / deny / ask."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gateway.core.errors import ConfigError
from gateway.core.rules import NO_COUNTERS, Facts, Rule, RuleEngine, RuleOutcome, compile_rules, evaluate

NOW = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
POLICIES = """
@id("small-charges")
@reason("under 50 EUR")
permit(principal, action == Action::"charge", resource) when { context.amount < 5000 };

@id("payroll-never-charges")
forbid(principal == Agent::"payroll", action == Action::"charge", resource);

forbid(principal, action == Action::"deploy", resource) when { context.env == "prod" };
"""


def decide(agent: str, step: str, args: dict[str, object]) -> tuple[RuleOutcome, str | None, str]:
    rs = compile_rules([], engine=RuleEngine.CEDAR, cedar=POLICIES)
    result = evaluate(rs, Facts(agent, step, run_id="r1", args=args), NO_COUNTERS, NOW)
    return result.outcome, result.rule, result.reason


def test_permit_is_allow_with_the_policy_id_and_reason() -> None:
    assert decide("billing", "charge", {"amount": 4200}) == (RuleOutcome.ALLOW, "small-charges", "under 50 EUR")


def test_forbid_is_deny_and_beats_permit() -> None:
    assert decide("payroll", "charge", {"amount": 1}) == (RuleOutcome.DENY, "payroll-never-charges", "")
    assert decide("billing", "deploy", {"env": "prod"}) == (RuleOutcome.DENY, "policy2", "")  # no @id: Cedar's id


def test_no_decision_is_ask() -> None:
    assert decide("billing", "charge", {"amount": 900_000}) == (RuleOutcome.ASK, None, "")
    assert decide("billing", "deploy", {"env": "staging"}) == (RuleOutcome.ASK, None, "")
    assert decide("billing", "email", {}) == (RuleOutcome.ASK, None, "")


def test_an_error_never_allows() -> None:
    rs = compile_rules([], engine=RuleEngine.CEDAR, cedar=POLICIES)
    result = evaluate(rs, Facts("billing", "charge", args={}), NO_COUNTERS, NOW)  # context.amount missing
    assert result.outcome == RuleOutcome.ASK and result.errors
    floats = evaluate(rs, Facts("billing", "charge", args={"amount": 1.5}), NO_COUNTERS, NOW)  # Cedar has no floats
    assert floats.outcome == RuleOutcome.ASK and floats.errors


def test_bad_policies_and_mixing_engines_fail_at_compile() -> None:
    with pytest.raises(ConfigError) as info:
        compile_rules([], engine=RuleEngine.CEDAR, cedar="permit(principal, action, resource) when { nonsense")
    assert info.value.key == "rules.cedar" and "\n" not in info.value.message
    with pytest.raises(ConfigError, match=r"rule\.x"):
        compile_rules([Rule("x", "true", RuleOutcome.ALLOW)], engine=RuleEngine.CEDAR, cedar=POLICIES)
    with pytest.raises(ConfigError, match='engine = "cedar"'):
        compile_rules([], cedar=POLICIES)


def test_the_hash_covers_the_policies() -> None:
    a = compile_rules([], engine=RuleEngine.CEDAR, cedar=POLICIES)
    assert a.hash == compile_rules([], engine=RuleEngine.CEDAR, cedar=POLICIES).hash
    assert a.hash != compile_rules([], engine=RuleEngine.CEDAR, cedar=POLICIES + "\n// more").hash
