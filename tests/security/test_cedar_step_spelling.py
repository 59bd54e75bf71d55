"""Cedar: a step, run id or agent name with a character outside ASCII (`chargé`) used to be
written into the request as a JSON `\\u00e9` escape, which Cedar does not read; the request
failed to build, no policy ran, and a `forbid` that named the agent came out as `ask`. The
uids are written as Cedar reads them, so every policy runs."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gateway.core.rules import NO_COUNTERS, Facts, RuleEngine, RuleOutcome, compile_rules, evaluate

pytest.importorskip("cedarpy")

POLICIES = """
@id("payroll-never")
forbid(principal == Agent::"payroll", action, resource);

@id("cafe-orders")
permit(principal, action == Action::"café", resource == Approval::"tâche-1");
"""


@pytest.mark.parametrize(
    ("agent", "step", "run_id", "outcome", "rule"),
    [
        ("payroll", "chargé", "run", RuleOutcome.DENY, "payroll-never"),
        ("payroll", "x", "rün", RuleOutcome.DENY, "payroll-never"),
        ("payroll", "line\nbreak\x01\x7f \u0301", "run", RuleOutcome.DENY, "payroll-never"),
        ("billing", "café", "tâche-1", RuleOutcome.ALLOW, "cafe-orders"),
        ("billing", 'quote"and\\slash', "run", RuleOutcome.ASK, None),
    ],
)
def test_a_cedar_request_with_non_ascii_names_runs_every_policy(
    agent: str, step: str, run_id: str, outcome: RuleOutcome, rule: str | None
) -> None:
    ruleset = compile_rules([], engine=RuleEngine.CEDAR, cedar=POLICIES)
    result = evaluate(ruleset, Facts(agent, step, run_id), NO_COUNTERS, datetime(2026, 1, 1, tzinfo=UTC))
    assert (result.outcome, result.rule, result.errors) == (outcome, rule, ())
