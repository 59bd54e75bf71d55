"""Operators' rule use cases: a dry run (`POST /v1/rules/evaluate`, `hitl-gateway rules test`)
and the report (`hitl-gateway rules report`). Both only read.

A dry run evaluates a suspend body exactly as a suspend would, with the agent's real budgets,
and suspends nothing. It reads the budgets without the per-agent lock a suspend takes: it
decides nothing, so there is nothing for a concurrent suspend to slip past.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from gateway.core.clock import Clock
from gateway.core.principals import agent_namespace
from gateway.core.rules import NO_COUNTERS, Facts, RuleResult, evaluate
from gateway.service.rulereport import RuleReport, tally
from gateway.settings import Settings
from gateway.store import Store, sqlite_path

REPORT_LIMIT = 1_000_000  # events a report reads at most (a week of a busy gateway fits)


def store_missing(url: str) -> str | None:
    """Why there is no store to read the budgets from (None: there may be one; try it). A dry run
    does not create a SQLite file that is not there."""
    if not url.startswith("sqlite:"):
        return None
    path = sqlite_path(url)
    if path == ":memory:" or not Path(path).exists():
        return f"no SQLite file at {path}"
    return None


class RuleOps:
    """The rules' read use cases, for operators (the caller authorizes: the HTTP handler asks
    for an operator key, the CLI is the operator's own)."""

    def __init__(self, settings: Settings, store: Store, clock: Clock) -> None:
        self._settings, self._store, self._clock = settings, store, clock

    async def evaluate(self, facts: Facts, now: datetime | None = None) -> RuleResult:
        """What the rules answer for `facts` now, with the agent's budgets as stored."""
        ruleset = self._settings.rules
        at = now or self._clock.now()
        counters = NO_COUNTERS
        if ruleset.counters:
            counters = await self._store.read_counters(agent_namespace(facts.agent), ruleset.counters, at)
        return evaluate(ruleset, facts, counters, at)

    async def report(self, since: datetime) -> RuleReport:
        """Per rule since `since`: what it decided, or would have (shadow), against what happened."""
        return tally(await self._store.rule_history(since, REPORT_LIMIT), self._settings.rules)


__all__ = ["REPORT_LIMIT", "RuleOps", "store_missing"]
