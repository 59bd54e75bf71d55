"""Frozen, timezone-aware records and explicit status enums."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from enum import StrEnum
from operator import attrgetter
from typing import Any, NamedTuple

from hitl_sdk.models import Decision, Outcome, Source, StepRecord, StepStatus

from gateway.core.calendar import Calendar
from gateway.core.clock import from_ts, iso, to_ts
from gateway.core.durations import format_duration, parse_duration
from gateway.core.principals import namespace_of
from gateway.core.terms import EditTerms, Proposal
from gateway.core.traces import TraceContext

# Decision, Outcome, Source, StepRecord and StepStatus are shared with the agent SDK (hitl_sdk):
# the gateway stores exactly what the agent reads.
__all__ = [
    "PRUNED",
    "Approval",
    "Card",
    "ClaimedJob",
    "Decision",
    "DeliveryStatus",
    "EditTerms",
    "Event",
    "JobStatus",
    "NewEvent",
    "NewOutbox",
    "OnTimeout",
    "OutboxItem",
    "OutboxKind",
    "Outcome",
    "Policy",
    "Proposal",
    "ResumeJob",
    "Source",
    "Status",
    "StepRecord",
    "StepStatus",
    "Vote",
]

PRUNED = ""  # Approval.sealed once retention removed the raw args and state (sql prune_raw)


def _aware(name: str, value: datetime | None) -> None:
    if value is not None and value.tzinfo is None:
        raise ValueError(f"{name} must be timezone-aware")


class Status(StrEnum):
    WAITING = "waiting_approval"
    APPROVED = "approved"
    REJECTED = "rejected"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"

    @property
    def final(self) -> bool:
        return self is not Status.WAITING

    @property
    def verb(self) -> str:
        """How people say it: 'approved', 'timed out', 'waiting'."""
        return "waiting" if self is Status.WAITING else self.value.replace("_", " ")


class OnTimeout(StrEnum):
    APPROVE = "approve"
    REJECT = "reject"
    ESCALATE = "escalate"


@dataclass(frozen=True, slots=True)
class Policy:
    name: str = "default"
    timeout: timedelta | None = timedelta(minutes=30)
    on_timeout: OnTimeout = OnTimeout.REJECT
    escalate_to: tuple[str, ...] = ()
    escalation_timeout: timedelta | None = None
    after_escalation: Outcome = Outcome.REJECT
    remind: tuple[timedelta, ...] = ()
    quorum: int = 1
    extend: tuple[timedelta, ...] = ()  # the durations an approver may add to the deadline
    max_extensions: int = 0  # how many extensions in all (parse_policy: 1 when `extend` is given alone)
    require_reason: bool = False  # a reject must say why, on every path
    # Standing grants an approver may add to an approve (gateway.core.grants): "run" and/or
    # durations, normalized ("1h"); the longest a grant lives ("run": this long); and the
    # top-level args a grant covers (None: all of them, the same args hash).
    grants: tuple[str, ...] = ()
    grant_max: timedelta = timedelta(hours=24)
    grant_fields: tuple[str, ...] | None = None
    # Business hours (gateway.core.calendar): the timeout, reminders, escalation and extensions
    # count only working time. Stored whole in the approval's policy, so an approval keeps the
    # hours it was created with.
    calendar: Calendar | None = None

    def to_json(self) -> dict[str, Any]:
        return self._base_json() | self._extra_json()

    def _extra_json(self) -> dict[str, Any]:
        """The keys added in v12, only when set: older policies are stored byte for byte as before."""
        out: dict[str, Any] = {}
        if self.extend:
            out["extend"] = [format_duration(d) for d in self.extend]
            out["max_extensions"] = self.max_extensions
        if self.require_reason:
            out["require_reason"] = True
        if self.grants:  # v19: only when offered, so older policies stay byte for byte
            out["grants"] = list(self.grants)
            out["grant_max"] = format_duration(self.grant_max)
            if self.grant_fields is not None:
                out["grant_fields"] = list(self.grant_fields)
        if self.calendar is not None:  # only when set, like the keys above
            out["calendar"] = self.calendar.to_json()
        return out

    def _base_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "timeout": format_duration(self.timeout) if self.timeout else "never",
            "on_timeout": self.on_timeout.value,
            "escalate_to": list(self.escalate_to),
            "escalation_timeout": (format_duration(self.escalation_timeout) if self.escalation_timeout else None),
            "after_escalation": self.after_escalation.value,
            "remind": [format_duration(r) for r in self.remind],
            "quorum": self.quorum,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Policy:
        timeout = data.get("timeout")
        esc = data.get("escalation_timeout")
        return cls(
            name=str(data.get("name", "inline")),
            timeout=None if timeout in (None, "never") else parse_duration(timeout),
            on_timeout=OnTimeout(data.get("on_timeout", "reject")),
            escalate_to=tuple(data.get("escalate_to", ())),
            escalation_timeout=None if esc in (None, "never") else parse_duration(esc),
            after_escalation=Outcome(data.get("after_escalation", "reject")),
            remind=tuple(parse_duration(r) for r in data.get("remind", ())),
            quorum=int(data.get("quorum", 1)),
            extend=tuple(parse_duration(d) for d in data.get("extend", ())),
            max_extensions=int(data.get("max_extensions", 0)),
            require_reason=bool(data.get("require_reason", False)),
            grants=tuple(data.get("grants", ())),
            grant_max=parse_duration(data.get("grant_max", "24h")),
            grant_fields=None if data.get("grant_fields") is None else tuple(data["grant_fields"]),
            calendar=Calendar.from_json(data["calendar"]) if data.get("calendar") else None,
        )


def _who(person: str | None, name: str | None) -> dict[str, str]:
    """The optional display fields of a vote or decision, stored only when known."""
    out = {"person": person} if person else {}
    return out | ({"name": name} if name else {})


@dataclass(frozen=True, slots=True)
class Vote:
    """One person's vote. `approver` is a canonical identity; `person` the `[people]` name it
    belongs to (one party in the quorum, whatever identity voted); `name` how the platform shows
    the voter (e.g. '@alice'), for cards."""

    approver: str
    outcome: Outcome
    at: datetime
    comment: str | None = None
    channel: str | None = None
    # An operator's note of whom it acted for (the API's `by`), or the delegator a delegate
    # decided for (then `delegation` is set): recorded, never the approver.
    on_behalf_of: str | None = None
    person: str | None = None
    name: str | None = None
    delegation: str | None = None  # the delegation's id, when a delegate decided for someone
    counts_as: str | None = None  # then the delegator's party: the one person this vote counts as

    def __post_init__(self) -> None:
        _aware("at", self.at)

    @property
    def party(self) -> str:
        """Who this vote counts as: the delegator's party for a delegate's vote, else the
        person, else the identity (a name has no ':')."""
        return self.counts_as or self.person or self.approver

    @property
    def voter(self) -> str:
        """The human who cast it (the person, else the identity), whoever it counts as: one
        human approves once, for themselves or for a delegator, never both."""
        return self.person or self.approver

    def to_json(self) -> dict[str, Any]:
        out = {
            "approver": self.approver,
            "outcome": self.outcome.value,
            "at": to_ts(self.at),
            "comment": self.comment,
            "channel": self.channel,
            **_who(self.person, self.name),
        }
        if self.on_behalf_of is not None:
            out["on_behalf_of"] = self.on_behalf_of
        if self.delegation is not None:  # only when set: older votes are stored byte for byte
            out["delegation"] = self.delegation
            out["counts_as"] = self.counts_as
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Vote:
        at = from_ts(d["at"])
        assert at is not None
        return cls(
            d["approver"],
            Outcome(d["outcome"]),
            at,
            d.get("comment"),
            d.get("channel"),
            on_behalf_of=d.get("on_behalf_of"),
            person=d.get("person"),
            name=d.get("name"),
            delegation=d.get("delegation"),
            counts_as=d.get("counts_as"),
        )


@dataclass(frozen=True, slots=True)
class Approval:
    id: str
    idempotency_key: str
    run_id: str
    step: str
    title: str
    summary: str
    args: dict[str, Any]
    state: Any
    channels: tuple[str, ...]
    approvers: tuple[str, ...]
    policy: Policy
    worker: str | None
    requested_by: str | None
    status: Status
    created_at: datetime
    deadline: datetime | None
    args_hash: str
    version: int = 1
    wake_at: datetime | None = None
    votes: tuple[Vote, ...] = ()
    decision: Decision | None = None
    escalations: int = 0
    reminders_sent: int = 0
    # encrypted raw {"args", "state"} (gateway.core.sealing); args above are redacted. None: stored
    # before sealing existed (the args are the raw ones); PRUNED: removed by retention.
    sealed: str | None = None
    agent: str | None = None  # the principal that created it (agent:NAME, operator:NAME); None before v11
    terms: EditTerms | None = None  # args_schema and editable, when the suspend gave them (v12)
    proposal: Proposal | None = None  # the edited args the current round votes on, if any
    extensions: int = 0  # how many times the deadline was extended
    code_version: str | None = None  # the agent code that suspended (a worker's `accepts` must match it)
    # the trace context of its suspend (v24): its cards', decision's and job's spans join that trace
    trace: TraceContext | None = None

    def __post_init__(self) -> None:
        # Checked inline (every decoded or evolved approval passes here); _aware names the field.
        created, deadline, wake_at = self.created_at, self.deadline, self.wake_at
        if (
            (created is not None and created.tzinfo is None)
            or (deadline is not None and deadline.tzinfo is None)
            or (wake_at is not None and wake_at.tzinfo is None)
        ):
            for name in ("created_at", "deadline", "wake_at"):
                _aware(name, getattr(self, name))

    def evolve(self, **changes: Any) -> Approval:
        """A copy with `changes` (what `dataclasses.replace` does, in half the time: the
        scheduler evolves every approval of a timeout storm). Validated like a new one."""
        values = list(_approval_fields(self))
        try:
            for name, value in changes.items():
                values[_APPROVAL_INDEX[name]] = value
        except KeyError:
            raise TypeError(f"Approval has no field {name!r}") from None
        return Approval(*values)

    @property
    def namespace(self) -> str:
        """The namespace of its run id and idempotency key: its agent's, or NO_AGENT ('')."""
        return namespace_of(self.agent)

    @property
    def approvals_count(self) -> int:
        """Distinct parties who approved: a person's identities on several channels count once."""
        return len({v.party for v in self.votes if v.outcome is Outcome.APPROVE})

    @property
    def editable(self) -> bool:
        return self.terms is not None and self.terms.allows_edits

    @property
    def current_args(self) -> dict[str, Any]:
        """The args the current round votes on (redacted): the proposal's, else the original."""
        return self.proposal.args if self.proposal is not None else self.args

    @property
    def current_hash(self) -> str:
        return self.proposal.args_hash if self.proposal is not None else self.args_hash

    @property
    def run_hash(self) -> str:
        """The hash of the args that run: the edited ones once approved with changes, else the
        original (also when a policy decided while a round on changes was waiting)."""
        d = self.decision
        return self.proposal.args_hash if self.proposal and d is not None and d.args is not None else self.args_hash

    @property
    def quorum_text(self) -> str:
        """Quorum progress for cards, e.g. '1 of 2 approvals' (adapters render it)."""
        needed = self.policy.quorum
        return f"{min(self.approvals_count, needed)} of {needed} approval{'s' if needed != 1 else ''}"

    def to_api(self) -> dict[str, Any]:
        """The public JSON view (no `state`: that is only for rehydration)."""
        return {
            "id": self.id,
            "run_id": self.run_id,
            "step": self.step,
            "title": self.title,
            "summary": self.summary,
            "args": self.args,
            "channels": list(self.channels),
            "approvers": list(self.approvers),
            "policy": self.policy.to_json(),
            "worker": self.worker,
            "requested_by": self.requested_by,
            "agent": self.agent,
            "code_version": self.code_version,
            "status": self.status.value,
            "created_at": iso(self.created_at),
            "deadline": iso(self.deadline),
            "next_wake_at": iso(self.wake_at),
            "idempotency_key": self.idempotency_key,
            "quorum": {
                "required": self.policy.quorum,
                "approvals": self.approvals_count,
                "approved_by": list(dict.fromkeys(v.approver for v in self.votes if v.outcome is Outcome.APPROVE)),
                "met": self.approvals_count >= self.policy.quorum,
                "text": self.quorum_text,
            },
            "votes": [{**v.to_json(), "at": iso(v.at)} for v in self.votes],
            "decision": self.decision.to_api() if self.decision else None,
            "escalations": self.escalations,
            "reminders_sent": self.reminders_sent,
            "version": self.version,
            "args_schema": self.terms.schema if self.terms else None,
            "editable": (self.terms.to_json()["editable"] if self.terms else False),
            "proposal": self.proposal.to_json() if self.proposal else None,
            "current_args_hash": self.current_hash,  # a decision's `args_hash`: approve what you read
            "extensions": self.extensions,
        }


_APPROVAL_FIELDS = tuple(f.name for f in fields(Approval))
_APPROVAL_INDEX = {name: i for i, name in enumerate(_APPROVAL_FIELDS)}
_approval_fields = attrgetter(*_APPROVAL_FIELDS)  # every field's value, in __init__ order


@dataclass(frozen=True, slots=True)
class NewEvent:
    approval_id: str
    kind: str
    at: datetime
    actor: str | None = None
    channel: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Event:
    id: int
    approval_id: str
    kind: str
    at: datetime
    actor: str | None
    channel: str | None
    data: dict[str, Any]

    def to_api(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "at": iso(self.at),
            "actor": self.actor,
            "channel": self.channel,
            "data": self.data,
        }


class OutboxKind(StrEnum):
    POST = "post"  # post the card for the first time
    SYNC = "sync"  # re-render the card from the approval's current state
    REMIND = "remind"  # a reminder next to the card
    EVENT = "event"  # a signed outbound event to a webhook (gateway.core.webhooks), sent in order per approval


class DeliveryStatus(StrEnum):
    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"
    # A post whose outcome cannot be known (the platform may have shown it): it is not retried,
    # so that a card is never posted twice; a press on the card adopts it (see docs/channels.md).
    UNCERTAIN = "uncertain"


@dataclass(frozen=True, slots=True)
class OutboxItem:
    id: int
    approval_id: str
    channel: str
    kind: OutboxKind
    status: DeliveryStatus
    attempts: int
    next_attempt_at: datetime
    last_error: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    resent_at: datetime | None = None  # an outbound event an operator sent again after it was given up


@dataclass(frozen=True, slots=True)
class NewOutbox:
    approval_id: str
    channel: str
    kind: OutboxKind
    data: dict[str, Any] = field(default_factory=dict)
    # Set when the card was posted in this same commit (the web card is the approval row itself:
    # no I/O to wait for): the row is stored `done` after one attempt and the card as posted with
    # this ref at `posted_at`, exactly what the outbox would have recorded. Only for POST rows.
    ref: str | None = None
    posted_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Card:
    """One posted card: where it lives on its channel (`ref`, e.g. a message id)."""

    approval_id: str
    channel: str
    ref: str | None
    status: DeliveryStatus
    error: str | None
    posted_at: datetime | None
    updated_at: datetime | None

    def to_api(self) -> dict[str, Any]:
        return {
            "channel": self.channel,
            "ref": self.ref,
            "status": self.status.value,
            "error": self.error,
            "posted_at": iso(self.posted_at),
            "updated_at": iso(self.updated_at),
        }


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class ResumeJob:
    id: int
    approval_id: str
    worker: str
    status: JobStatus
    attempts: int
    next_attempt_at: datetime
    claimed_by: str | None
    lease_until: datetime | None
    last_error: str | None
    output_tail: str | None
    created_at: datetime
    updated_at: datetime
    # How many times it was claimed, never reset (an operator's retry resets `attempts`): a
    # claim's number fences its lease renewals and its outcome's record (gateway/jobs/worker.py).
    claims: int = 0

    def to_api(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "approval_id": self.approval_id,
            "worker": self.worker,
            "status": self.status.value,
            "attempts": self.attempts,
            "next_attempt_at": iso(self.next_attempt_at),
            "claimed_by": self.claimed_by,
            "lease_until": iso(self.lease_until),
            "last_error": self.last_error,
            "output_tail": self.output_tail,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
        }


class ClaimedJob(NamedTuple):
    """A resume job just leased, with what it launches with, read in the claim's transaction:
    its approval (None if gone) and the journal of the approval's run in its namespace."""

    job: ResumeJob
    approval: Approval | None
    journal: list[StepRecord]
