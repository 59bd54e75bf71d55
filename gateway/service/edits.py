"""The service side of approve-with-changes and of reasons: turning an approver's edited args
into a checked, redacted `Proposal` with the raw args sealed, and `require_reason`.

Approvers see redacted args (cards, the web page, the API). An edit built from what they saw
may carry a redaction marker ('[redacted:...]') for a field they did not touch: a top-level value
equal to the one shown is taken as unchanged and keeps its raw value, so an edit never writes a
redaction marker into what runs.

Checking args against a schema (at suspend and for every edit) runs in a worker process
(gateway.service.checks), never on the event loop: the schema is the agent's.
"""

from __future__ import annotations

from typing import Any

from gateway.core import edits
from gateway.core.errors import RawPruned, ValidationError
from gateway.core.keys import args_hash, canonical_json
from gateway.core.models import PRUNED, Approval, EditTerms, Outcome, Proposal
from gateway.core.redact import Redactor
from gateway.core.sealing import Sealer
from gateway.service.checks import checked


async def parse_terms(schema: Any, editable: Any, args: Any) -> EditTerms | None:
    """A suspend's `args_schema` and `editable`, checked, and its args against the schema."""
    if schema is None:  # nothing to compile or run: no process hop
        return edits.parse_terms(schema, editable)
    return await checked(edits.terms_checked, schema, editable, args)


def check_reason(approval: Approval, outcome: Outcome, comment: str | None) -> None:
    """`require_reason`: a reject without a reason is a 400 on every path (API, web, chat)."""
    if outcome is Outcome.REJECT and approval.policy.require_reason and not (comment or "").strip():
        raise ValidationError("comment", f"policy '{approval.policy.name}' requires a reason to reject")


def raw_sealed(sealer: Sealer, approval: Approval) -> dict[str, Any]:
    """The sealed raw copy: {"args", "state"} and, once edited, "edited" (the proposal's args)."""
    if approval.sealed is None:  # stored before sealing existed
        return {"args": approval.args, "state": approval.state}
    if approval.sealed == PRUNED:  # not the redacted args in their place: they are not what was approved
        raise RawPruned(approval.id)
    opened: dict[str, Any] = sealer.open(approval.sealed)
    return opened


def raw_current(sealer: Sealer, approval: Approval, raw: dict[str, Any] | None = None) -> dict[str, Any]:
    """The raw args the current round votes on (what runs if it is approved now); `raw`: the
    sealed copy when the caller opened it already (each opening decrypts)."""
    raw = raw_sealed(sealer, approval) if raw is None else raw
    current: dict[str, Any] = raw["edited"] if approval.proposal is not None and "edited" in raw else raw["args"]
    return current


async def propose(
    sealer: Sealer, redactor: Redactor, approval: Approval, edited: Any, actor: str, name: str | None
) -> tuple[Proposal | None, str | None]:
    """The proposal an approve with `edited` args makes (None when they are the current args),
    and the sealed copy to store with it; a ValidationError (400) naming the path otherwise."""
    if not isinstance(edited, dict):
        raise ValidationError("args", "must be a JSON object (the edited args)")
    raw = raw_sealed(sealer, approval)
    current = raw_current(sealer, approval)
    shown = approval.current_args
    merged = {k: current[k] if k in shown and k in current and v == shown[k] else v for k, v in edited.items()}
    if approval.terms is not None and approval.terms.schema is not None:
        await checked(edits.check_edit, approval.terms, raw["args"], merged)
    else:
        edits.check_edit(approval.terms, raw["args"], merged)
    digest = args_hash(merged)
    if digest == approval.current_hash:
        return None, None
    last = approval.proposal.round if approval.proposal else 0
    proposal = Proposal(
        args=redactor.value(merged),
        patch=redactor.value(edits.make_patch(raw["args"], merged)),
        by=actor,
        round=last + 1,
        args_hash=digest,
        name=name,
    )
    if digest == approval.args_hash:  # back to the original args: nothing edited to seal
        body = {"args": raw["args"], "state": raw["state"]}
    else:
        body = {"args": raw["args"], "state": raw["state"], "edited": merged}
    return proposal, sealer.seal_json(canonical_json(body))


def approved_raw(
    sealer: Sealer, approval: Approval, raw: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """(approved args, original args, patch), raw: what the worker runs, what the agent asked
    for, and the RFC 6902 patch between them (empty when nothing was changed). `raw`: the
    sealed copy when the caller opened it already."""
    raw = raw_sealed(sealer, approval) if raw is None else raw
    d = approval.decision
    approved = raw_current(sealer, approval, raw) if d is not None and d.args is not None else raw["args"]
    return approved, raw["args"], edits.make_patch(raw["args"], approved) if approved != raw["args"] else []


__all__ = ["approved_raw", "check_reason", "parse_terms", "propose", "raw_current", "raw_sealed"]
