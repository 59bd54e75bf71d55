"""Outbound events (pure): which transitions become which event kind, the CloudEvents 1.0
envelope each carries, and when a failed delivery is tried again or given up.

An event is built once, in the transaction that commits its transition, and stored in its outbox
row: every retry sends the same document with the same id (the `webhook-id` receivers
de-duplicate on). Nothing here signs or sends; that is `gateway.delivery.events`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

from gateway.core.clock import iso
from gateway.core.events import EventKind
from gateway.core.models import Approval
from gateway.core.retry import backoff

REQUESTED = "approval.requested"
DECIDED = "approval.decided"
TIMED_OUT = "approval.timed_out"
ESCALATED = "approval.escalated"
JOB_SUCCEEDED = "job.succeeded"
JOB_FAILED = "job.failed"
EVENT_KINDS = (REQUESTED, DECIDED, TIMED_OUT, ESCALATED, JOB_SUCCEEDED, JOB_FAILED)
TYPE_PREFIX = "dev.hitl-gateway."  # CloudEvents `type`: reverse-DNS of the producer, then the kind
ADDRESS_PREFIX = "webhook:"  # an event row's outbox address: webhook:<name>
MAX_ERROR = 500  # characters of a job's error carried in its event

_KINDS: dict[str, str] = {
    EventKind.SUSPENDED: REQUESTED,
    EventKind.APPROVED: DECIDED,
    EventKind.REJECTED: DECIDED,
    EventKind.CANCELLED: DECIDED,  # an operator's cancel is the approval's final decision
    EventKind.TIMED_OUT: TIMED_OUT,
    EventKind.ESCALATED: ESCALATED,
    EventKind.JOB_SUCCEEDED: JOB_SUCCEEDED,
    EventKind.JOB_FAILED: JOB_FAILED,
}


@dataclass(frozen=True, slots=True)
class Backlog:
    """One webhook's events not delivered (the dashboard): waiting for their first try or for
    the one before them, failing (tried, to be tried again), and given up."""

    name: str
    pending: int = 0
    failing: int = 0
    given_up: int = 0
    last_error: str | None = None
    last_error_at: datetime | None = None


def kind_of(event: str) -> str | None:
    """The outbound kind an approval event announces, if any."""
    return _KINDS.get(event)


def address(name: str) -> str:
    return f"{ADDRESS_PREFIX}{name}"


def webhook_name(address: str) -> str | None:
    """The webhook an outbox address names; None for a card's address."""
    return address[len(ADDRESS_PREFIX) :] if address.startswith(ADDRESS_PREFIX) else None


def envelope(
    kind: str, event_id: str, source: str, approval: Approval, at: datetime, facts: Mapping[str, Any]
) -> dict[str, Any]:
    """The CloudEvents 1.0 structured-mode document of one event. `facts` is the data of the
    approval event it announces (a job's worker, attempt and error)."""
    return {
        "specversion": "1.0",
        "id": event_id,
        "source": source,
        "type": TYPE_PREFIX + kind,
        "time": iso(at),
        "subject": approval.id,
        "datacontenttype": "application/json",
        "data": data(kind, approval, facts),
    }


def data(kind: str, approval: Approval, facts: Mapping[str, Any]) -> dict[str, Any]:
    """What an event says of its approval: what the API shows, never the raw args, the state,
    a token or a key. `args` are the stored ones, redacted at suspend as on cards and in logs."""
    out: dict[str, Any] = {
        "approval_id": approval.id,
        "run_id": approval.run_id,
        "step": approval.step,
        "agent": approval.agent,
        "title": approval.title,
        "status": approval.status.value,
        "policy": approval.policy.name,
        "channels": list(approval.channels),
        "requested_by": approval.requested_by,
        "created_at": iso(approval.created_at),
        "deadline": iso(approval.deadline),
        "args": approval.args,
        "args_hash": approval.args_hash,
        "escalations": approval.escalations,
        "decided_by": approval.decision.decided_by if approval.decision else None,
    }
    if approval.decision is not None:
        d = approval.decision
        out["decision"] = {
            "outcome": d.outcome.value,
            "decided_by": d.decided_by,
            "decided_at": iso(d.decided_at),
            "source": d.source.value,
            "comment": d.comment,
            "reason": d.reason,
            "on_behalf_of": d.on_behalf_of,
            "person": d.person,
            "edited": d.patch is not None and len(d.patch) > 0,
        }
    if kind in (JOB_SUCCEEDED, JOB_FAILED):
        error = facts.get("error")
        out["job"] = {
            "worker": facts.get("worker", approval.worker),
            "attempt": facts.get("attempt"),
            "error": str(error)[:MAX_ERROR] if error else None,
        }
    return out


def retry_after(value: str | None, now: datetime) -> float | None:
    """A `Retry-After` header in seconds: delay-seconds or an HTTP-date (RFC 9110 10.2.3);
    None when absent or unreadable (then the backoff decides)."""
    if value is None:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():  # str.isdigit alone says yes to "²", which float() refuses
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP-date is always GMT
        return None
    return max(0.0, (when - now).total_seconds())


def next_try(
    attempt: int,
    happened: datetime,
    now: datetime,
    *,
    max_backoff: timedelta,
    give_up_after: timedelta,
    server_delay: float | None = None,
    rand: float | None = None,
) -> float | None:
    """Seconds until the next try after failed try number `attempt` (1-based), or None to give
    up. The receiver's own delay wins over the backoff (it may be longer than the cap); the last
    try is at `happened + give_up_after`, and a failure then gives up."""
    deadline = happened + give_up_after
    if now >= deadline:
        return None
    if server_delay is None:
        delay = backoff(attempt, base=1.0, cap=max_backoff.total_seconds(), rand=rand)
    else:
        delay = server_delay
    return min(delay, (deadline - now).total_seconds())


__all__ = [
    "ADDRESS_PREFIX",
    "DECIDED",
    "ESCALATED",
    "EVENT_KINDS",
    "JOB_FAILED",
    "JOB_SUCCEEDED",
    "REQUESTED",
    "TIMED_OUT",
    "TYPE_PREFIX",
    "Backlog",
    "address",
    "data",
    "envelope",
    "kind_of",
    "next_try",
    "retry_after",
    "webhook_name",
]
