"""The audit part of the store (`AuditStore`, both backends implement it) and its row codecs.

Reads come in approval order for the checker (gateway/core/audit_check.py); writing a checkpoint is
one transaction: seal the heads that moved, link, sign (`make`), insert it with its leaves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

from gateway.core.audit import ChainEvent, Checkpoint, Leaf

__all__ = ["AuditStore", "Chains", "MakeCheckpoint", "chain_event", "checkpoint_from_row", "group_leaves"]

# (the previous checkpoint or None, the heads to seal) -> the new, signed checkpoint
MakeCheckpoint = Callable[[Checkpoint | None, Sequence[Leaf]], Checkpoint]


class Chains(NamedTuple):
    """Approvals' events and what they are checked against, read in one snapshot (a decision
    committed between two reads would show as a row, or a head, ahead of its events)."""

    events: list[ChainEvent]  # by approval id, then event id
    heads: dict[str, tuple[int, str]] | None  # live head rows (PostgreSQL); None: a head is its last event
    rows: dict[str, tuple[Any, Any, Any, Any]]  # approvals row: (status, decision, proposal, args_hash)

    @classmethod
    def of(cls, events: list[ChainEvent], heads: dict[str, tuple[int, str]] | None, rows: Sequence[Any]) -> Chains:
        """From the rows of `audit_rows_in`."""
        return cls(events, heads, {r["id"]: (r["status"], r["decision"], r["proposal"], r["args_hash"]) for r in rows})


class AuditStore(Protocol):
    async def audit_approvals(self, since: float, until: float, *, full: bool) -> list[str]:
        """Approval ids with an event in [since, until], or sealed by a checkpoint in it; with
        `full`, also every approval with a head row (PostgreSQL). Sorted."""
        ...

    async def audit_events(self, approval_ids: Sequence[str]) -> list[ChainEvent]:
        """Their events, by approval id then event id."""
        ...

    async def audit_chains(self, approval_ids: Sequence[str]) -> Chains:
        """Their events (as `audit_events`) and, read in the same snapshot, their approvals rows
        and live head rows (PostgreSQL: what a truncated chain no longer matches; SQLite: None,
        a head is the approval's last event, with nothing apart to compare)."""
        ...

    async def audit_chain_start(self) -> int | None:
        """The id of the first event with a hash (None: no chained event yet)."""
        ...

    async def audit_missing_event(self) -> int | None:
        """The first event id missing where ids have no holes (SQLite: events are never deleted
        and AUTOINCREMENT never reuses an id), else None."""
        ...

    async def audit_checkpoints(self, since: float, until: float) -> list[Checkpoint]:
        """Checkpoints taken in [since, until], in order, with their leaves."""
        ...

    async def write_checkpoint(self, make: MakeCheckpoint, *, force: bool) -> Checkpoint | None:
        """Seal the heads moved since the last checkpoint into a new one; None if none moved
        (unless `force`: an empty checkpoint still links and signs the chain)."""
        ...

    async def prune_raw(self, before: float, limit: int) -> int:
        """Retention: drop the sealed raw args/state of decided approvals (see prune_raw)."""
        ...


def chain_event(row: Any) -> ChainEvent:
    return ChainEvent(
        row["id"],
        row["approval_id"],
        row["seq"],
        row["kind"],
        row["at"],
        row["actor"],
        row["channel"],
        row["data"],
        row["hash"],
    )


def checkpoint_from_row(row: Any, leaves: Sequence[Leaf] = ()) -> Checkpoint:
    return Checkpoint(
        row["seq"],
        row["at"],
        row["prev"],
        row["root"],
        row["heads"],
        row["hash"],
        row["signature"],
        row["key_id"],
        tuple(leaves),
    )


def group_leaves(checkpoints: Sequence[Any], leaves: Sequence[Any]) -> list[Checkpoint]:
    by: dict[int, list[Leaf]] = {}
    for r in leaves:
        by.setdefault(r["checkpoint"], []).append(Leaf(r["approval_id"], r["seq"], r["hash"]))
    return [checkpoint_from_row(c, by.get(c["seq"], ())) for c in checkpoints]


def checkpoint_values(c: Checkpoint) -> tuple[Any, ...]:
    return (c.seq, c.at, c.prev, c.root, c.heads, c.hash, c.signature, c.key_id)
