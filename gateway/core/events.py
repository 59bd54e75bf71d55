"""Every kind of event in an approval's append-only history (the audit trail), by name.

Events are stored and served as their string values; this enum is the one place that names
them, so that no module spells an event kind by hand (or parses one it misspelt).
"""

from __future__ import annotations

from enum import StrEnum


class EventKind(StrEnum):
    # ------------------------------------------------------------ the approval's life
    SUSPENDED = "suspended"
    VOTE = "vote"  # an approval short of the quorum
    DUPLICATE_VOTE = "duplicate_vote"  # the same person approving again (counts once)
    APPROVED = "approved"
    REJECTED = "rejected"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    ESCALATED = "escalated"
    REMINDED = "reminded"
    COMMENT_ADDED = "comment_added"  # the reason given after a reject
    EDITED = "edited"  # an approver changed the args: a new round of votes on them begins
    EXTENDED = "extended"  # an approver or operator extended the deadline, as the policy allows
    RULE_SHADOW = "rule_shadow"  # a shadow rule matched: what it would have done (nothing enforced)
    GRANT_REVOKED = "grant_revoked"  # a standing grant this approve made was revoked (data: grant)
    DENIED = "denied"  # a press or decision by someone who may not decide (kept at most 5 times)
    # ------------------------------------------------------------ cards (the outbox)
    POST_ATTEMPT = "post_attempt"  # written before each post: a crash mid-call leaves it open
    POST_RESEND = "post_resend"  # an operator's "post again": earlier attempts no longer count
    CARD_POSTED = "card_posted"
    CARD_SYNCED = "card_synced"
    CARD_ADOPTED = "card_adopted"  # a card whose post had no recorded answer, found by a press
    ORPHAN_CARD_SYNCED = "orphan_card_synced"  # a second copy of a card, closed by a press on it
    CARD_DEGRADED = "card_degraded"  # the platform refused the full card (too big): a compact one follows
    CARD_MOVED = "card_moved"  # the card's chat moved (e.g. a group became a supergroup): its new ref
    REMINDER_SENT = "reminder_sent"
    DELIVERY_RETRY = "delivery_retry"
    DELIVERY_FAILED = "delivery_failed"
    DELIVERY_UNCERTAIN = "delivery_uncertain"  # a post that may have reached the platform
    EVENT_RESEND = "event_resend"  # an operator's "send again" of outbound events given up (one per webhook)
    # ------------------------------------------------------------ resume jobs
    JOB_QUEUED = "job_queued"
    JOB_STARTED = "job_started"
    JOB_RETRYING = "job_retrying"
    JOB_SUCCEEDED = "job_succeeded"
    JOB_FAILED = "job_failed"
    JOB_REQUEUED = "job_requeued"


FINAL = frozenset({EventKind.APPROVED, EventKind.REJECTED, EventKind.TIMED_OUT, EventKind.CANCELLED})

__all__ = ["FINAL", "EventKind"]
