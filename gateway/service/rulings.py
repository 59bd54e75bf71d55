"""Rules as a step of the suspend: the facts a suspend gives the rules, the routing an `ask` rule
imposes, and the approval an `allow` or `deny` rule decides at once (a decision like a person's:
the same events, bound to the same args hash, and a named worker's resume job).

Pure: the suspend use case (gateway.service.approvals) evaluates, then builds with these.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from gateway.core import rules as engine
from gateway.core.events import EventKind
from gateway.core.models import Approval, Decision, NewEvent, Outcome, Source, Status
from gateway.core.principals import Principal
from gateway.core.rules import RuleOutcome, RuleResult

RULE_PREFIX = "rule:"
DEFAULT_RULE = "default"  # `decided_by: "rule:default"` when rules.default allows or denies


def facts(
    run_id: str, step: str, args: dict[str, Any], context: dict[str, Any] | None, principal: Principal | None
) -> engine.Facts:
    """The facts of a suspend: the agent is the caller's own name (never anything it sends)."""
    agent = principal.name if principal is not None and not principal.is_operator else ""
    return engine.Facts(agent=agent, step=step, run_id=run_id, args=args, context=context or {})


def decides(result: RuleResult) -> bool:
    return result.outcome is not RuleOutcome.ASK


def grant_may_decide(result: RuleResult | None) -> bool:
    """Whether a standing grant may stand in for the person: only where the rules left the step
    to their default `ask`. An enforced rule's `ask` (a budget crossed, a step routed to other
    approvers or a stricter policy) wants a person each time, and a rule that could not be
    evaluated might have denied; a grant, made on other facts, answers neither."""
    return result is None or (result.outcome is RuleOutcome.ASK and result.rule is None and not result.failed)


def decided_by(result: RuleResult) -> str:
    return RULE_PREFIX + (result.rule or DEFAULT_RULE)


def narrowed(requested: Sequence[str], by_rule: Sequence[str]) -> tuple[str, ...]:
    """The approvers of an `ask` rule narrow the agent's: both, where both name some (the rule's
    alone where the two share nobody: the operator's word is the floor, not the agent's)."""
    if not by_rule:
        return tuple(requested)
    if not requested:
        return tuple(by_rule)
    both = tuple(a for a in requested if a in set(by_rule))
    return both or tuple(by_rule)


def suspended_data(result: RuleResult | None) -> dict[str, Any]:
    """What the `suspended` event records of the rules: the rule that matched (None: the
    default, or no rules) and the rule set's hash, plus conditions that failed to evaluate."""
    if result is None:
        return {}
    data: dict[str, Any] = {"rule": result.rule, "rules_hash": result.rules_hash}
    if result.errors:
        data["rule_errors"] = [{"rule": e.rule, "message": e.message} for e in result.errors]
    return data


def shadow_events(approval_id: str, result: RuleResult | None, now: datetime) -> list[NewEvent]:
    """One `rule_shadow` event per shadow rule that matched: what it would have done."""
    if result is None:
        return []
    return [
        NewEvent(
            approval_id,
            EventKind.RULE_SHADOW,
            now,
            RULE_PREFIX + hit.rule,
            data={"rule": hit.rule, "would": str(hit.outcome), "reason": hit.reason, "rules_hash": result.rules_hash},
        )
        for hit in result.shadow
    ]


def decide(approval: Approval, result: RuleResult, now: datetime) -> tuple[Approval, NewEvent]:
    """The approval as an `allow` or `deny` rule leaves it, and the decision's event."""
    outcome = Outcome.APPROVE if result.outcome is RuleOutcome.ALLOW else Outcome.REJECT
    by = decided_by(result)
    reason = result.reason or (f"rule {result.rule}" if result.rule else f"rules.default = {result.outcome}")
    decision = Decision(outcome, by, now, Source.RULE, reason=reason)
    status = Status.APPROVED if outcome is Outcome.APPROVE else Status.REJECTED
    after = approval.evolve(status=status, decision=decision, wake_at=None)
    kind = EventKind.APPROVED if outcome is Outcome.APPROVE else EventKind.REJECTED
    data = {"outcome": outcome.value, "rule": result.rule, "reason": reason, "args_hash": approval.args_hash}
    return after, NewEvent(approval.id, kind, now, by, None, data)


__all__ = [
    "DEFAULT_RULE",
    "RULE_PREFIX",
    "decide",
    "decided_by",
    "decides",
    "facts",
    "grant_may_decide",
    "narrowed",
    "shadow_events",
]
