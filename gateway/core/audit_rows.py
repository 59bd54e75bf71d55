"""An approval's row against its chained events, pure: the row is current state and outside the
chain, so a rewrite of its status, decision or args hash would pass every hash. The events say
what the row must hold; `row_problem` names the first field that disagrees.

What the events fix: the status (the final event's kind, or waiting), the decision's outcome and
who decided (`data.by`, else the event's actor: `policy` for a timeout), the args hash the agent
asked with (`suspended.data.args_hash`) and the hash of the args approved (the final event's
`args_hash` when approved on edited args, else the agent's).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gateway.core.audit import ChainEvent
from gateway.core.events import FINAL, EventKind

__all__ = ["RowState", "row_problem"]

_STATUS = {
    EventKind.APPROVED: "approved",
    EventKind.REJECTED: "rejected",
    EventKind.TIMED_OUT: "timed_out",
    EventKind.CANCELLED: "cancelled",
}


@dataclass(frozen=True, slots=True)
class RowState:
    """What the audit compares of an approvals row (as stored, or as an export's `approval` line)."""

    status: str
    outcome: str | None
    decided_by: str | None
    args_hash: str
    approved_args_hash: str | None  # the hash of the args that run, once approved

    @classmethod
    def from_columns(cls, status: Any, decision: Any, proposal: Any, args_hash: Any) -> RowState:
        """From the stored columns (decision and proposal as JSON text); ValueError or TypeError
        for values no gateway writes, which the checker names."""
        d = json.loads(decision) if decision is not None else None
        p = json.loads(proposal) if proposal is not None else None
        if not (d is None or isinstance(d, dict)) or not (p is None or isinstance(p, dict)):
            raise ValueError("decision and proposal must be JSON objects")
        outcome = None if d is None else _text(d.get("outcome"))
        edited = d is not None and d.get("args") is not None and p is not None  # Approval.run_hash
        approved = _text(p.get("args_hash")) if edited and p is not None else _text(args_hash)
        return cls(
            _text(status) or "",
            outcome,
            None if d is None else _text(d.get("decided_by")),
            _text(args_hash) or "",
            approved if outcome == "approve" else None,
        )

    def to_json(self, approval_id: str) -> dict[str, Any]:
        return {
            "type": "approval",
            "id": approval_id,
            "status": self.status,
            "outcome": self.outcome,
            "decided_by": self.decided_by,
            "args_hash": self.args_hash,
            "approved_args_hash": self.approved_args_hash,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RowState:
        for name in ("status", "args_hash"):
            if not isinstance(d[name], str):
                raise ValueError(f"approval {name} must be a string, not {d[name]!r}")
        for name in ("outcome", "decided_by", "approved_args_hash"):
            if not isinstance(d.get(name), str | None):
                raise ValueError(f"approval {name} must be a string or null, not {d[name]!r}")
        return cls(d["status"], d.get("outcome"), d.get("decided_by"), d["args_hash"], d.get("approved_args_hash"))


def row_problem(row: RowState | None, events: Sequence[ChainEvent]) -> tuple[str, str, str] | None:
    """(field, expected, found) for the first field of `row` its events contradict, else None.
    Only for a chain that starts with its `suspended` event (events before the chain prove
    nothing); a missing row is a problem too (rows are kept forever)."""
    if not events or events[0].kind != EventKind.SUSPENDED or events[0].hash is None:
        return None
    if row is None:
        return "approvals row", "one (rows are never deleted)", "none"
    asked = _data(events[0]).get("args_hash")
    finals = [e for e in events if e.kind in FINAL]
    if len(finals) > 1:
        kinds = ", ".join(f"{e.kind} (seq {e.seq})" for e in finals)
        return "decision", "at most one final event", kinds
    final = finals[0] if finals else None
    checks: list[tuple[str, Any, Any]] = [
        ("status", _STATUS[EventKind(final.kind)] if final else "waiting_approval", row.status)
    ]
    if isinstance(asked, str):
        checks.append(("args_hash", asked, row.args_hash))
    if final is not None:
        data = _data(final)
        outcome = {"approved": "approve", "timed_out": data.get("outcome")}.get(final.kind, "reject")
        checks += [
            ("decision.outcome", outcome, row.outcome),
            ("decided_by", data.get("by", final.actor), row.decided_by),
        ]
        approved = data.get("args_hash") if "patch" in data else asked  # approved on edited args, else as asked
        if outcome == "approve" and isinstance(approved, str):
            checks.append(("approved args_hash", approved, row.approved_args_hash))
    return next(((f, str(want), str(got)) for f, want, got in checks if want != got), None)


def _data(e: ChainEvent) -> dict[str, Any]:
    try:
        data = json.loads(e.data)
    except ValueError:
        return {}  # the chain check names data no gateway writes
    return data if isinstance(data, dict) else {}


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"a string or null, not {value!r}")
