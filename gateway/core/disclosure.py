"""What an agent may read of its own approvals (pure): all of it but what the operators' rules
record about themselves.

A shadow rule is one an operator is trying out: it enforces nothing yet, and its `rule_shadow`
events say what it would have done. A condition that failed to evaluate leaves `rule_errors` on
the `suspended` event, and where `rules.default` is deny, its message becomes the reason of the
decision by `rule:default`. Shown to the agent whose suspend they judged, they would say which
rules are coming and on which bodies the rules break: a map for shaping the next request around
them. So every reply an agent's key or a resume token gets (the approval, its events, the
rehydration document, a worker's document) goes through here; an operator's key and the web
inbox's approvers read them all. What an enforced rule did (`rule`, `routed`, `rules_hash`, its
decision and reason) stays: that is the agent's own outcome.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gateway.core.events import EventKind

OPERATORS_ONLY_KINDS = frozenset({EventKind.RULE_SHADOW})
OPERATORS_ONLY_DATA = ("rule_errors",)
DEFAULT_DECIDER = "rule:default"  # gateway.service.rulings: RULE_PREFIX + DEFAULT_RULE
_DECIDED = frozenset({EventKind.APPROVED, EventKind.REJECTED})


def default_reason(outcome: str) -> str:
    """The reason of a decision by `rules.default`, as the rules word it (`approve` is `allow`)."""
    return f"rules.default = {'allow' if outcome == 'approve' else 'deny'}"


def decision(view: dict[str, Any] | None) -> dict[str, Any] | None:
    """A decision (its API form) as an agent reads it: one by `rules.default` gives the default
    as its reason, never the message of a condition that failed."""
    if view is None or view.get("source") != "rule" or view.get("decided_by") != DEFAULT_DECIDER:
        return view
    return {**view, "reason": default_reason(str(view.get("outcome")))}


def approval(view: dict[str, Any]) -> dict[str, Any]:
    """An approval's API view (`to_api`, or the service's fuller `view`) as an agent reads it."""
    if view.get("decision") is None:
        return view
    return {**view, "decision": decision(view["decision"])}


def event(item: dict[str, Any]) -> dict[str, Any] | None:
    """One event (its API form) as an agent reads it; None for one it is not shown."""
    kind = item.get("kind")
    if kind in OPERATORS_ONLY_KINDS:
        return None
    data = item.get("data")
    if not isinstance(data, dict):
        return item
    kept = {k: v for k, v in data.items() if k not in OPERATORS_ONLY_DATA}
    if kind in _DECIDED and item.get("actor") == DEFAULT_DECIDER and "reason" in kept:
        kept["reason"] = default_reason(str(kept.get("outcome")))
    return item if kept == data else {**item, "data": kept}


def events(items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """An approval's trail as an agent reads it: in order, without what it is not shown, each
    event's `id` its position in that trail (1, 2, ...). Event ids are one sequence for the whole
    store, and a hidden `rule_shadow` event takes its number in the suspend's own transaction: the
    gaps in the ids the agent read would count the verdicts hidden from it."""
    shown = (e for e in map(event, items) if e is not None)
    return [{**e, "id": position} for position, e in enumerate(shown, 1)]


def rehydration(doc: dict[str, Any]) -> dict[str, Any]:
    """A rehydration document (a resume token's, a worker's) as an agent reads it."""
    out = dict(doc)
    if isinstance(out.get("approval"), dict):
        out["approval"] = approval(out["approval"])
    if isinstance(out.get("decision"), dict):
        out["decision"] = decision(out["decision"])
    return out


__all__ = [
    "DEFAULT_DECIDER",
    "OPERATORS_ONLY_DATA",
    "OPERATORS_ONLY_KINDS",
    "approval",
    "decision",
    "default_reason",
    "event",
    "events",
    "rehydration",
]
