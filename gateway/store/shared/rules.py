"""The rules port, written once over the named SQL: the budgets a rule reads (also inside a
suspend's own transaction, `read_budgets`), and the events `rules report` tallies."""

from __future__ import annotations

import json
from collections.abc import Collection
from datetime import datetime
from typing import Any

from gateway.core.clock import to_ts
from gateway.core.models import Decision, Status
from gateway.core.rules import CounterKey, CounterSnapshot
from gateway.store.base import RuleTrace
from gateway.store.shared.backend import Backend, Tx
from gateway.store.sql import Dialect, Queries

__all__ = ["RulesSQL", "read_budgets"]


def _path(dialect: Dialect, field: str) -> str | list[str]:
    """A dotted field (`amount`, `charge.amount`) as the dialect's JSON path."""
    return "$." + field if dialect == "sqlite" else field.split(".")


def _number(value: Any) -> int | float:
    """A SUM as CEL wants it: an int when whole (CEL does not add an int to a double)."""
    if isinstance(value, int):
        return value
    number = float(value)
    return int(number) if number.is_integer() else number


async def read_budgets(
    tx: Tx, Q: Queries, dialect: Dialect, namespace: str, keys: Collection[CounterKey], now: datetime
) -> CounterSnapshot:
    """Each budget of `keys`: what the namespace had approved (or allowed) since `now - window`."""
    values: dict[CounterKey, int | float] = {}
    for key in keys:
        since = to_ts(now - key.window)
        if key.field is None:
            row = await tx.fetch_one(Q.budget_count, (namespace, since))
        else:
            row = await tx.fetch_one(Q.budget_spent, (namespace, _path(dialect, key.field), since))
        values[key] = _number(row[0] if row is not None else 0)
    return CounterSnapshot(values)


class RulesSQL(Backend):
    async def read_counters(self, namespace: str, keys: Collection[CounterKey], now: datetime) -> CounterSnapshot:
        async def op(tx: Tx) -> CounterSnapshot:
            return await read_budgets(tx, self.Q, self.dialect, namespace, keys, now)

        return await self.read(op)

    async def rule_history(self, since: datetime, limit: int) -> list[RuleTrace]:
        rows = await self.fetch_all(self.Q.rule_history, (to_ts(since), limit))
        return [
            RuleTrace(
                r["approval_id"],
                r["kind"],
                json.loads(r["data"]),
                r["agent"],
                Status(r["status"]),
                Decision.from_json(json.loads(r["decision"])) if r["decision"] else None,
            )
            for r in rows
        ]
