"""Row codecs shared by every backend: records <-> column values (JSON text, epoch seconds)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from typing import Any

from gateway.core.clock import from_ts, to_ts
from gateway.core.errors import StoredDataUnreadable
from gateway.core.keys import canonical_json
from gateway.core.models import (
    Approval,
    Card,
    Decision,
    DeliveryStatus,
    EditTerms,
    Event,
    JobStatus,
    OutboxItem,
    OutboxKind,
    Policy,
    Proposal,
    ResumeJob,
    Status,
    StepRecord,
    StepStatus,
    Vote,
)
from gateway.core.traces import TraceContext

Row = Any  # sqlite3.Row or asyncpg.Record: both index by column name

APPROVAL_COLUMNS = (
    "id",
    "idempotency_key",
    "run_id",
    "step",
    "title",
    "summary",
    "args",
    "state",
    "channels",
    "approvers",
    "policy",
    "worker",
    "requested_by",
    "status",
    "version",
    "created_at",
    "deadline",
    "wake_at",
    "votes",
    "decision",
    "escalations",
    "reminders_sent",
    "args_hash",
    "sealed",
    "agent",
    "terms",
    "proposal",
    "extensions",
    "code_version",
    "traceparent",
    "tracestate",
)

APPROVAL_SELECT = ", ".join(APPROVAL_COLUMNS)  # a SELECT list in that order, for approval_from_values

# The columns a policy transition (timeout, escalation, reminder) changes: the scheduler's batch
# writes only these, not the whole row.
# (an escalation to a group:NAME widens the approvers, as one to a channel widens the channels)
POLICY_COLUMNS = (
    "status",
    "version",
    "deadline",
    "wake_at",
    "decision",
    "escalations",
    "reminders_sent",
    "channels",
    "approvers",
)


def dumps(value: Any) -> str:
    return "null" if value is None else canonical_json(value)  # None: every new approval's state


@functools.lru_cache(maxsize=1024)
def _strings_json(values: tuple[str, ...]) -> str:
    """Channels and approvers lists repeat: encode each tuple once."""
    return canonical_json(list(values))


@functools.lru_cache(maxsize=1024)
def _policy_json(policy: Policy) -> str:
    """Named policies are the same frozen object on every approval: encode each once."""
    return canonical_json(policy.to_json())


@functools.lru_cache(maxsize=256)
def _decision_json(decision: Decision) -> str:
    """A timeout storm decides every approval alike (same outcome, reason and instant): encode
    each distinct decision once. Decision is frozen."""
    return canonical_json(decision.to_json())


def _decision_text(d: Decision | None) -> str | None:
    if d is None:
        return None
    if d.args is not None or d.patch is not None:  # edited: dicts inside, not hashable for the cache
        return canonical_json(d.to_json())
    return _decision_json(d)


def approval_values(a: Approval) -> tuple[Any, ...]:
    return (
        a.id,
        a.idempotency_key,
        a.run_id,
        a.step,
        a.title,
        a.summary,
        dumps(a.args),
        dumps(a.state),
        _strings_json(a.channels),
        _strings_json(a.approvers),
        _policy_json(a.policy),
        a.worker,
        a.requested_by,
        a.status.value,
        a.version,
        to_ts(a.created_at),
        to_ts(a.deadline),
        to_ts(a.wake_at),
        dumps([v.to_json() for v in a.votes]) if a.votes else "[]",
        _decision_text(a.decision),
        a.escalations,
        a.reminders_sent,
        a.args_hash,
        a.sealed,
        a.agent,
        canonical_json(a.terms.to_json()) if a.terms else None,
        canonical_json(a.proposal.to_json()) if a.proposal else None,
        a.extensions,
        a.code_version,
        a.trace.traceparent if a.trace else None,
        a.trace.tracestate if a.trace else None,
    )


def policy_values(a: Approval) -> tuple[Any, ...]:
    return (
        a.status.value,
        a.version,
        to_ts(a.deadline),
        to_ts(a.wake_at),
        _decision_text(a.decision),
        a.escalations,
        a.reminders_sent,
        _strings_json(a.channels),
        _strings_json(a.approvers),
    )


def _ts(row: Row, key: str) -> Any:
    return from_ts(row[key])


@functools.lru_cache(maxsize=1024)
def _policy(text: str) -> Policy:
    """Policies repeat (named ones are identical JSON): parse each text once. Policy is frozen."""
    return Policy.from_json(json.loads(text))


@functools.lru_cache(maxsize=1024)
def _strings(text: str) -> tuple[str, ...]:
    """Channels and approvers columns repeat ('["web"]', '[]'): decode each text once."""
    return tuple(json.loads(text))


@functools.lru_cache(maxsize=256)
def _votes(text: str) -> tuple[Vote, ...]:
    """Mostly '[]'; Vote is frozen, so a decoded tuple can be shared."""
    return tuple(Vote.from_json(v) for v in json.loads(text))


def approval_from_row(row: Row) -> Approval:
    return approval_from_values([row[c] for c in APPROVAL_COLUMNS])


_STATUS = {s.value: s for s in Status}


def approval_from_values(values: Sequence[Any]) -> Approval:
    """An approval from its column values in `APPROVAL_COLUMNS` order (a plain tuple row of
    `SELECT {APPROVAL_SELECT}`: no per-name lookups, which a due claim does for 10^5 rows)."""
    (
        id_, key, run_id, step, title, summary, args, state, channels, approvers, policy, worker, requested_by,
        status, version, created_at, deadline, wake_at, votes, decision, escalations, reminders_sent, args_hash, sealed,
        agent, terms, proposal, extensions, code_version, traceparent, tracestate,
    ) = values  # fmt: skip
    created = from_ts(created_at)
    assert created is not None
    return Approval(  # by position (a third faster than 24 keywords), in the order of its fields
        id_,
        key,
        run_id,
        step,
        title,
        summary,
        _loads(args),
        _loads(state),
        _strings(channels),
        _strings(approvers),
        _policy(policy),
        worker,
        requested_by,
        _STATUS.get(status) or Status(status),
        created,
        from_ts(deadline),
        args_hash,
        version,
        from_ts(wake_at),
        _votes(votes),
        Decision.from_json(_loads(decision)) if decision else None,
        escalations,
        reminders_sent,
        sealed,
        agent,
        EditTerms.from_json(json.loads(terms)) if terms else None,
        Proposal.from_json(json.loads(proposal)) if proposal else None,
        extensions or 0,
        code_version,
        TraceContext(traceparent, tracestate) if traceparent else None,
    )


_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _loads(text: str) -> Any:
    """`json.loads` of a stored column (written by `dumps`: no surrounding whitespace) through
    the C scanner alone, half the cost of a small value; anything else takes `json.loads`."""
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def event_from_row(row: Row) -> Event:
    try:
        return Event(
            id=row["id"],
            approval_id=row["approval_id"],
            kind=row["kind"],
            at=_ts(row, "at"),
            actor=row["actor"],
            channel=row["channel"],
            data=json.loads(row["data"]),
        )
    except (OverflowError, ValueError, OSError, TypeError):
        # A time that is no date (NaN, infinite, outside years 1-9999) or data that is no JSON
        # was written by someone with database access: named, instead of a traceback.
        raise StoredDataUnreadable(
            f"event {row['id']} of approval {row['approval_id']} is not one the gateway wrote (its time or "
            "data is unreadable): the database was changed outside the gateway; `hitl-gateway audit verify` "
            "names what else was",
            event=row["id"],
            approval_id=row["approval_id"],
        ) from None


def outbox_from_row(row: Row) -> OutboxItem:
    return OutboxItem(
        id=row["id"],
        approval_id=row["approval_id"],
        channel=row["channel"],
        kind=OutboxKind(row["kind"]),
        status=DeliveryStatus(row["status"]),
        attempts=row["attempts"],
        next_attempt_at=_ts(row, "next_attempt_at"),
        last_error=row["last_error"],
        data=json.loads(row["data"]),
        resent_at=_ts(row, "resent_at"),
    )


def card_from_row(row: Row) -> Card:
    return Card(
        approval_id=row["approval_id"],
        channel=row["channel"],
        ref=row["ref"],
        status=DeliveryStatus(row["status"]),
        error=row["error"],
        posted_at=_ts(row, "posted_at"),
        updated_at=_ts(row, "updated_at"),
    )


def job_from_row(row: Row) -> ResumeJob:
    return ResumeJob(
        id=row["id"],
        approval_id=row["approval_id"],
        worker=row["worker"],
        status=JobStatus(row["status"]),
        attempts=row["attempts"],
        next_attempt_at=_ts(row, "next_attempt_at"),
        claimed_by=row["claimed_by"],
        lease_until=_ts(row, "lease_until"),
        last_error=row["last_error"],
        output_tail=row["output_tail"],
        created_at=_ts(row, "created_at"),
        updated_at=_ts(row, "updated_at"),
        claims=row["claims"],
    )


def step_from_row(row: Row) -> StepRecord:
    return StepRecord(
        run_id=row["run_id"],
        name=row["name"],
        status=StepStatus(row["status"]),
        output=json.loads(row["output"]) if row["output"] is not None else None,
        attempts=row["attempts"],
        started_at=_ts(row, "started_at"),
        finished_at=_ts(row, "finished_at"),
        error=row["error"],
    )
