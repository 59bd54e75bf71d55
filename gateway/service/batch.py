"""Decide many at once: each item is its own decision through the one use case a single decision
takes (`Service.decide`, so `Decisions.cast`), with every check it would get alone (who may
decide, the round it saw, quorum, `require_reason`, already decided). An item that cannot be
decided is its error, with the code a single decision would have answered; it stops nothing
else. Used by `POST /v1/approvals/decisions` (operators) and the web inbox (approvers).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gateway.contract import BATCH_ITEMS
from gateway.core.errors import GatewayError, ValidationError
from gateway.core.models import Approval, Outcome
from gateway.service.approvals import Service
from gateway.service.commands import Authority

BATCH_MAX = BATCH_ITEMS  # items per batch (the contract's): a longer one is refused whole (400), nothing decided


@dataclass(frozen=True, slots=True)
class BatchItem:
    """One decision of a batch. `seen`: the round tag of what the decider saw (an approve drawn
    for other args is refused, naming `seen_field` of the batch); `problem`: why the item was
    refused before any decision (a bad field), given back as its error."""

    approval_id: str
    outcome: Outcome
    comment: str | None = None
    seen: str | None = None
    problem: GatewayError | None = None


@dataclass(frozen=True, slots=True)
class ItemResult:
    """The approval as the item's decision left it, or the error that refused the item."""

    approval_id: str
    approval: Approval | None = None
    error: GatewayError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_api(self) -> dict[str, Any]:
        """`{"id", "ok", "status" | "error"}` (gateway.contract.BatchDecisionReply's item)."""
        out: dict[str, Any] = {"id": self.approval_id or None, "ok": self.ok}
        if self.error is not None:
            out["error"] = self.error.to_json()["error"]
        elif self.approval is not None:
            out["status"] = self.approval.status.value
        return out


@dataclass(frozen=True, slots=True)
class Batch:
    """Who decides every item, and how they came to be trusted (`Authority`: the one switch of
    authorization, as for a single decision)."""

    actor: str
    authority: Authority
    channel: str
    seen_field: str = "round"


async def decide_each(service: Service, batch: Batch, items: Sequence[BatchItem]) -> list[ItemResult]:
    """Decide the items in order, each on its own (one committed, the next refused: both stand).
    An id given twice is decided once, at its first place (the second is a validation error: a
    second vote by the same person is no second approval). A server error (5xx) is raised: the
    items before it are committed, and a retry of the batch answers them `already_decided`."""
    if len(items) > BATCH_MAX:
        raise ValidationError("items", f"at most {BATCH_MAX} items per batch, got {len(items)}")
    results: list[ItemResult] = []
    seen_ids: set[str] = set()
    for item in items:
        if item.problem is not None:
            results.append(ItemResult(item.approval_id, error=item.problem))
            continue
        if item.approval_id in seen_ids:
            twice = ValidationError("id", "appears twice in this batch: it was decided at its first place")
            results.append(ItemResult(item.approval_id, error=twice))
            continue
        seen_ids.add(item.approval_id)
        try:
            approval = await service.decide(
                item.approval_id,
                item.outcome,
                batch.actor,
                authority=batch.authority,
                comment=item.comment,
                channel=batch.channel,
                seen=item.seen,
                seen_field=batch.seen_field,
            )
        except GatewayError as exc:
            if exc.status >= 500:
                raise
            results.append(ItemResult(item.approval_id, error=exc))
        else:
            results.append(ItemResult(item.approval_id, approval=approval))
    return results


__all__ = ["BATCH_MAX", "Batch", "BatchItem", "ItemResult", "decide_each"]
