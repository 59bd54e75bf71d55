"""`rules report`, tallied: per rule, what it did or would have done, against how each of those
approvals ended. Pure: `tally(traces, ruleset)` over the events the store read.

An enforced rule is judged by the approvals it matched (`suspended` names it): an `allow` or
`deny` rule decided them itself; an `ask` rule routed them to people. A shadow rule is judged by
its `rule_shadow` events: what it would have done, against what actually happened (a person's
decision, another rule's, a timeout). "Humans" are every decision that is not a rule's, a
timeout's or a cancel's (people, operators' keys, resume tokens, standing grants).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gateway.core.events import EventKind
from gateway.core.models import Source, Status
from gateway.core.rules import Mode, RuleOutcome, RuleSet
from gateway.store import RuleTrace

DEFAULT = "(default)"  # the suspends no enforced rule matched: rules.default applied

# How an approval ended, as the report counts it.
WAITING, TIMEOUT, CANCELLED = "waiting", "timed_out", "cancelled"
HUMAN_APPROVED, HUMAN_REJECTED = "humans_approved", "humans_rejected"
RULE_ALLOWED, RULE_DENIED = "rule_allowed", "rule_denied"


def ending(status: Status, source: Source | None) -> str:
    """How an approval stands, in the report's words."""
    if status is Status.WAITING:
        return WAITING
    if status is Status.CANCELLED or source is Source.CANCEL:
        return CANCELLED
    if status is Status.TIMED_OUT or source is Source.POLICY:
        return TIMEOUT
    approved = status is Status.APPROVED
    if source is Source.RULE:
        return RULE_ALLOWED if approved else RULE_DENIED
    return HUMAN_APPROVED if approved else HUMAN_REJECTED


@dataclass(slots=True)
class RuleLine:
    """One rule's tally. `outcome`: what it does (enforced) or would do (shadow); `matched` of
    `of` suspends (those of its agents, when it is scoped); `endings` of the matched approvals."""

    rule: str
    mode: Mode
    outcome: RuleOutcome
    matched: int = 0
    of: int = 0
    endings: Counter[str] = field(default_factory=Counter)

    def text(self) -> str:
        e, n = self.endings, self.matched
        if self.mode is Mode.SHADOW:
            head = f"{self.rule} (shadow): would have "
            if self.outcome is RuleOutcome.ALLOW:
                return head + f"allowed {n} of {self.of}; humans rejected {e[HUMAN_REJECTED]} of those {n}" + _rest(e)
            if self.outcome is RuleOutcome.DENY:
                return head + f"denied {n} of {self.of}; humans approved {e[HUMAN_APPROVED]} of those {n}" + _rest(e)
            ruled = e[RULE_ALLOWED] + e[RULE_DENIED]
            return head + f"asked about {n} of {self.of}; rules decided {ruled} of those" + _rest(e)
        if self.outcome is RuleOutcome.ALLOW:
            return f"{self.rule}: allowed {e[RULE_ALLOWED]} of {self.of}"
        if self.outcome is RuleOutcome.DENY:
            return f"{self.rule}: denied {e[RULE_DENIED]} of {self.of}"
        return f"{self.rule}: asked about {n} of {self.of}" + _rest(e)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "mode": str(self.mode),
            "outcome": str(self.outcome),
            "matched": self.matched,
            "of": self.of,
            "endings": dict(sorted(self.endings.items())),
            "text": self.text(),
        }


def _rest(endings: Counter[str]) -> str:
    shown = [f"{k.replace('_', ' ')} {v}" for k, v in sorted(endings.items()) if v]
    return f" ({', '.join(shown)})" if shown else ""


@dataclass(frozen=True, slots=True)
class RuleReport:
    suspends: int  # suspends that went through the rules in the window
    rules_hashes: tuple[str, ...]  # the rule sets that decided them (more than one: the rules changed)
    lines: tuple[RuleLine, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "suspends": self.suspends,
            "rules_hashes": list(self.rules_hashes),
            "rules": [line.as_dict() for line in self.lines],
        }


def tally(traces: Iterable[RuleTrace], ruleset: RuleSet) -> RuleReport:
    """The report of the events `traces` (oldest first), named and ordered by `ruleset` (the
    rules configured now first, then rules seen in the events only, then the default)."""
    lines: dict[tuple[str, Mode], RuleLine] = {}
    agents: Counter[str | None] = Counter()
    hashes: dict[str, None] = {}
    for t in traces:
        source = t.decision.source if t.decision is not None else None
        end = ending(t.status, source)
        if t.kind == EventKind.SUSPENDED:
            if "rules_hash" not in t.data:
                continue  # suspended with no rules configured
            hashes[str(t.data["rules_hash"])] = None
            agents[t.agent] += 1
            rule = t.data.get("rule") or DEFAULT
            outcome = RuleOutcome.ASK
            if source is Source.RULE and t.decision is not None:
                outcome = RuleOutcome.ALLOW if t.status is Status.APPROVED else RuleOutcome.DENY
            line = lines.setdefault((rule, Mode.ENFORCE), RuleLine(rule, Mode.ENFORCE, outcome))
            if outcome is not RuleOutcome.ASK:
                line.outcome = outcome  # an allow or deny rule: what it decided says which
        elif t.kind == EventKind.RULE_SHADOW:
            rule = str(t.data.get("rule"))
            would = RuleOutcome(t.data.get("would", "ask"))
            line = lines.setdefault((rule, Mode.SHADOW), RuleLine(rule, Mode.SHADOW, would))
        else:
            continue
        line.matched += 1
        line.endings[end] += 1
    for r in ruleset.rules:  # a configured rule that matched nothing still gets its line
        lines.setdefault((r.name, r.mode), RuleLine(r.name, r.mode, r.then))
    total = sum(agents.values())
    configured = {r.name: r for r in ruleset.rules}
    for (rule, mode), line in lines.items():
        known = configured.get(rule)
        if known is not None and known.mode is mode:
            line.outcome = known.then
        scoped = known.agents if known is not None else ()
        line.of = sum(agents[f"agent:{a}"] for a in scoped) if scoped else total
    order = {r.name: i for i, r in enumerate(ruleset.rules)}
    ranked = sorted(lines.values(), key=lambda ln: (ln.rule == DEFAULT, order.get(ln.rule, len(order)), ln.rule))
    return RuleReport(total, tuple(hashes), tuple(ranked))


__all__ = ["DEFAULT", "RuleLine", "RuleReport", "ending", "tally"]
