"""Row codecs shared by every backend: records <-> column values (JSON text, epoch seconds)."""

from __future__ import annotations

import functools
import json
from typing import Any

from gateway.clock import from_ts, to_ts
from gateway.keys import canonical_json
from gateway.models import (
    Approval,
    Card,
    Decision,
    DeliveryStatus,
    Event,
    JobStatus,
    OutboxItem,
    OutboxKind,
    Policy,
    ResumeJob,
    Status,
    StepRecord,
    StepStatus,
    Vote,
)

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
)

# The columns a policy transition (timeout, escalation, reminder) changes: the scheduler's batch
# writes only these, not the whole row.
POLICY_COLUMNS = ("status", "version", "deadline", "wake_at", "decision", "escalations", "reminders_sent", "channels")


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
        dumps(a.decision.to_json()) if a.decision else None,
        a.escalations,
        a.reminders_sent,
        a.args_hash,
        a.sealed,
    )


def policy_values(a: Approval) -> tuple[Any, ...]:
    return (
        a.status.value,
        a.version,
        to_ts(a.deadline),
        to_ts(a.wake_at),
        dumps(a.decision.to_json()) if a.decision else None,
        a.escalations,
        a.reminders_sent,
        _strings_json(a.channels),
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
    decision = row["decision"]
    created = from_ts(row["created_at"])
    assert created is not None
    return Approval(
        id=row["id"],
        idempotency_key=row["idempotency_key"],
        run_id=row["run_id"],
        step=row["step"],
        title=row["title"],
        summary=row["summary"],
        args=json.loads(row["args"]),
        state=json.loads(row["state"]),
        channels=_strings(row["channels"]),
        approvers=_strings(row["approvers"]),
        policy=_policy(row["policy"]),
        worker=row["worker"],
        requested_by=row["requested_by"],
        status=Status(row["status"]),
        version=row["version"],
        created_at=created,
        deadline=_ts(row, "deadline"),
        wake_at=_ts(row, "wake_at"),
        votes=_votes(row["votes"]),
        decision=Decision.from_json(json.loads(decision)) if decision else None,
        escalations=row["escalations"],
        reminders_sent=row["reminders_sent"],
        args_hash=row["args_hash"],
        sealed=row["sealed"],
    )


def event_from_row(row: Row) -> Event:
    return Event(
        id=row["id"],
        approval_id=row["approval_id"],
        kind=row["kind"],
        at=_ts(row, "at"),
        actor=row["actor"],
        channel=row["channel"],
        data=json.loads(row["data"]),
    )


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
