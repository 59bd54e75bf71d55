"""The report's tally (gateway.service.rulereport), pure: how an approval ended, shadow denies,
rules scoped to agents, and rules seen in the events that are no longer configured."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gateway.core.models import Decision, Outcome, Source, Status
from gateway.core.rules import Rule, RuleOutcome, compile_rules
from gateway.core.rules.model import Mode
from gateway.service.rulereport import ending, tally
from gateway.store import RuleTrace

AT = datetime(2030, 1, 1, tzinfo=UTC)


def decided(outcome: Outcome, source: Source) -> Decision:
    return Decision(outcome, "x", AT, source)


def trace(i: int, kind: str, data: dict[str, Any], status: Status, decision: Decision | None, agent: str) -> RuleTrace:
    return RuleTrace(f"a{i}", kind, data, agent, status, decision)


def test_endings() -> None:
    assert ending(Status.WAITING, None) == "waiting"
    assert ending(Status.APPROVED, Source.RULE) == "rule_allowed"
    assert ending(Status.REJECTED, Source.RULE) == "rule_denied"
    assert ending(Status.APPROVED, Source.OPERATOR) == "humans_approved"
    assert ending(Status.REJECTED, Source.HUMAN) == "humans_rejected"
    assert ending(Status.TIMED_OUT, Source.POLICY) == "timed_out"
    assert ending(Status.APPROVED, Source.POLICY) == "timed_out"  # on_timeout = approve is no person's word
    assert ending(Status.CANCELLED, Source.CANCEL) == "cancelled"


def test_shadow_deny_scoped_rules_and_retired_rules() -> None:
    ruleset = compile_rules(
        [
            Rule("no-refunds", 'step == "refund"', RuleOutcome.DENY, mode=Mode.SHADOW, agents=("billing",)),
            Rule("quiet", 'step == "never"', RuleOutcome.ALLOW),
        ]
    )
    h = {"rules_hash": ruleset.hash}
    human_ok = decided(Outcome.APPROVE, Source.HUMAN)
    traces = [
        trace(1, "suspended", h | {"rule": None}, Status.APPROVED, human_ok, "agent:billing"),
        trace(1, "rule_shadow", {"rule": "no-refunds", "would": "deny"}, Status.APPROVED, human_ok, "agent:billing"),
        trace(2, "suspended", h | {"rule": None}, Status.TIMED_OUT, None, "agent:ops"),
        trace(
            3,
            "suspended",
            {"rule": "old", "rules_hash": "other"},
            Status.APPROVED,
            decided(Outcome.APPROVE, Source.RULE),
            "agent:ops",
        ),
        trace(4, "suspended", {}, Status.WAITING, None, "agent:ops"),  # before any rules: not counted
    ]
    report = tally(traces, ruleset)
    assert report.suspends == 3 and report.rules_hashes == (ruleset.hash, "other")
    assert [line.text() for line in report.lines] == [
        "no-refunds (shadow): would have denied 1 of 1; humans approved 1 of those 1 (humans approved 1)",
        "quiet: allowed 0 of 3",
        "old: allowed 1 of 3",
        "(default): asked about 2 of 3 (humans approved 1, timed out 1)",
    ]
