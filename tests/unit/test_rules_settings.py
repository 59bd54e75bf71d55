"""[rules] and [[rule]] in the settings: parsed strictly, compiled at load, checked against the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config import load_settings
from gateway.core.errors import ConfigError
from gateway.core.rules import Mode, RuleEngine, RuleOutcome
from gateway.settings import Settings

BASE = """
[security]
secret_keys = ["a-secret-0123456789abcdef"]

[security.agents]
billing = "agent-key-billing-0123456789"

[policies.finance-two]
quorum = 2
"""
RULES = """
[rules]
timezone = "Europe/Madrid"
default = "ask"

[[rule]]
name = "small-charges"
when = 'step == "charge" && args.currency == "EUR" && args.amount < 5000'
then = "allow"
reason = "under 50 EUR"

[[rule]]
name = "large-charges"
when = 'step == "charge" && args.amount >= 1000000'
then = "ask"
policy = "finance-two"
channels = ["web"]
approvers = ["operator:cfo"]
agents = ["Billing"]
mode = "shadow"
"""


def load(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> Settings:
    path = tmp_path / "hitl.toml"
    path.write_text(BASE + text)
    return load_settings(path, env=env or {})


def test_the_rules_load_in_order_and_compiled(tmp_path: Path) -> None:
    rs = load(tmp_path, RULES).rules
    assert [r.name for r in rs.rules] == ["small-charges", "large-charges"]
    assert (rs.timezone, rs.default, rs.engine) == ("Europe/Madrid", RuleOutcome.ASK, RuleEngine.CEL)
    large = rs.rules[1]
    assert (large.then, large.mode, large.policy, large.channels) == (
        RuleOutcome.ASK,
        Mode.SHADOW,
        "finance-two",
        ("web",),
    )
    assert large.agents == ("billing",) and large.approvers == ("operator:cfo",)
    assert rs.hash == load(tmp_path, RULES).rules.hash  # stable across loads


def test_no_rules_is_the_old_behaviour(tmp_path: Path) -> None:
    rs = load(tmp_path, "").rules
    assert rs.rules == () and rs.default == RuleOutcome.ASK and not rs.active


def test_rules_keys_from_the_environment(tmp_path: Path) -> None:
    rs = load(tmp_path, RULES, {"HITL_RULES_DEFAULT": "deny", "HITL_RULES_TIMEZONE": "UTC"}).rules
    assert (rs.default, rs.timezone) == (RuleOutcome.DENY, "UTC")


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        (RULES.replace("args.amount >= 1000000", "args.amount >="), "rule.large-charges.when", "Syntax error"),
        (RULES.replace("args.currency", "args_currency"), "rule.small-charges.when", "args_currency"),
        (RULES.replace('then = "allow"', 'then = "maybe"'), "rule.small-charges.then", "allow, deny, ask"),
        (RULES.replace('mode = "shadow"', 'mode = "loud"'), "rule.large-charges.mode", "enforce, shadow"),
        (RULES.replace('reason = "under 50 EUR"', 'reson = "x"'), "rule.small-charges.reson", "unknown key"),
        (RULES.replace('then = "allow"\n', ""), "rule.small-charges.then", "missing"),
        (RULES.replace('name = "small-charges"\n', ""), "rule[0].name", "missing"),
        (RULES.replace('default = "ask"', 'default = "yes"'), "rules.default", "expected one of"),
        (RULES.replace('timezone = "Europe/Madrid"', 'timezone = "Nowhere/X"'), "rules.timezone", "unknown time zone"),
        (RULES.replace('"finance-two"', '"finance-three"'), "rule.large-charges.policy", "no policy named"),
        (RULES.replace('["web"]', '["fax:123"]'), "rule.large-charges.channels", "not enabled"),
        (RULES.replace('agents = ["Billing"]', "agents = [1]"), "rule.large-charges.agents[0]", "expected a string"),
        ('[rule]\nname = "x"\n', "rule", "array of tables"),
    ],
)
def test_a_bad_rule_stops_the_load_naming_it(tmp_path: Path, text: str, key: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    assert info.value.key == key
    assert problem in info.value.problem
    assert "\n" not in info.value.message


def test_agent_side_commands_do_not_compile_rules(tmp_path: Path) -> None:
    path = tmp_path / "hitl.toml"
    path.write_text(BASE + RULES.replace("args.amount >= 1000000", "args.amount >="))
    assert load_settings(path, env={}, validate=False).rules.rules == ()
