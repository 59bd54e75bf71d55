"""What an approver was shown, as facts for the audit trail (pure).

A card is rendered by its channel from the approval's display view: the run and step, the
title, the summary and the args as stored (redacted), who may approve and by when. Its
`card_posted` event records the SHA-256 of that content (`content_hash`) as it was when the
card went out, and each `card_synced` event the content the card was redrawn with (an edit's
proposed args, an extended deadline), so that the trail proves which text and args the person
deciding saw, even after the approval changes again or its raw args are gone (retention).
docs/audit.md shows how to recompute it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from gateway.core.clock import to_ts
from gateway.core.keys import canonical_json
from gateway.core.models import Approval

__all__ = ["audit_facts", "card_posted", "card_synced", "content", "content_hash"]


def content(approval: Approval) -> list[Any]:
    """The display view every channel renders a card from (version 2), in a fixed order: a list,
    so that only the args' keys need sorting. Version 2 added the proposed args (an approver's
    edit that the current round votes on, else null): a card redrawn after an edit shows them."""
    return [
        2,
        approval.id,
        approval.run_id,
        approval.step,
        approval.title,
        approval.summary,
        approval.args,
        approval.proposal.args if approval.proposal is not None else None,
        list(approval.approvers),
        approval.policy.quorum,
        to_ts(approval.deadline),
    ]


def content_hash(approval: Approval) -> str:
    return hashlib.sha256(canonical_json(content(approval)).encode("utf-8")).hexdigest()


def card_posted(approval: Approval, ref: str) -> dict[str, Any]:
    """The data of a `card_posted` event."""
    return {"ref": ref, "content_hash": content_hash(approval)}


def card_synced(approval: Approval) -> dict[str, Any]:
    """The data of a `card_synced` event: the status and the content the card now shows."""
    return {"status": approval.status.value, "content_hash": content_hash(approval)}


def audit_facts(approval: Approval) -> dict[str, Any]:
    """What a `suspended` event adds for the audit: the hash of the raw args (what the agent
    asked to do, before redaction) and the code version that asked."""
    facts: dict[str, Any] = {"args_hash": approval.args_hash}
    if approval.code_version is not None:
        facts["code_version"] = approval.code_version
    return facts
