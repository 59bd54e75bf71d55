"""The records the agent and the gateway share: a decision and a journaled step.

The gateway's store persists these very classes (`gateway.core.models` re-exports them), so the
agent reads a decision exactly as the gateway wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from hitl_sdk.times import from_ts, iso, parse_iso, to_ts

__all__ = ["Decision", "Outcome", "Source", "StepRecord", "StepStatus"]


class Outcome(StrEnum):
    """What was decided: approve or reject (a timeout's or a cancel's outcome too)."""

    APPROVE = "approve"
    REJECT = "reject"


class Source(StrEnum):
    """Where a decision came from: a person, an operator (an operator's API key: `decided_by` is
    `operator:NAME`), a timeout policy, a cancel, or a rule of the gateway (`decided_by` is
    `rule:NAME`), or a person's standing grant (`decided_by` is `grant:ID`)."""

    HUMAN = "human"
    OPERATOR = "operator"
    POLICY = "policy"
    CANCEL = "cancel"
    RULE = "rule"
    GRANT = "grant"


# Set only by a decision that edited the request (approve with edits); omitted from the JSON
# otherwise, so decisions without edits are stored byte for byte as before.
_EDIT_FIELDS = ("args", "original_args", "patch")


@dataclass(frozen=True, slots=True)
class Decision:
    """An approval's outcome. `args` (when set) are the arguments the approver approved, which
    may differ from `original_args` (what the agent asked for) by `patch` (a JSON Patch)."""

    outcome: Outcome
    decided_by: str
    decided_at: datetime
    source: Source = Source.HUMAN
    comment: str | None = None
    channel: str | None = None
    reason: str | None = None
    args: dict[str, Any] | None = None
    original_args: dict[str, Any] | None = None
    patch: list[dict[str, Any]] | None = None
    person: str | None = None  # the gateway's `[people]` name of `decided_by`, if any
    name: str | None = None  # how the chat platform shows the decider (e.g. '@alice')
    # Whom an operator said it acted for (the API's `by`): a note, never who decided. Omitted from
    # the JSON when unset, like the edit fields.
    on_behalf_of: str | None = None

    def __post_init__(self) -> None:
        if self.decided_at.tzinfo is None:
            raise ValueError("decided_at must be timezone-aware")

    @property
    def shown_as(self) -> str:
        """Who decided, as people should read it: the person, the platform's name, or the id."""
        return self.person or self.name or self.decided_by

    @property
    def approved(self) -> bool:
        return self.outcome is Outcome.APPROVE

    @property
    def edited_args(self) -> dict[str, Any] | None:
        """The approved arguments when the approver changed them, else None."""
        if not self.approved or self.args is None or self.args == self.original_args:
            return None
        return self.args

    def reason_text(self) -> str:
        """Why it was rejected, in words a model or a person can read."""
        said = self.comment or self.reason
        if self.source is Source.POLICY:
            return f"No decision within the deadline: {self.outcome.value} by policy" + (f" ({said})" if said else "")
        if self.source is Source.RULE:
            return f"Decided by the gateway's {self.decided_by}" + (f": {said}" if said else "")
        if self.source is Source.GRANT:
            return f"Decided by a standing grant ({self.decided_by})" + (f": {said}" if said else "")
        if self.source is Source.CANCEL:
            return f"The request was cancelled by {self.decided_by}" + (f": {said}" if said else "")
        return said or f"Rejected by {self.decided_by}"

    def to_json(self) -> dict[str, Any]:
        data = {
            "outcome": self.outcome.value,
            "decided_by": self.decided_by,
            "decided_at": to_ts(self.decided_at),
            "source": self.source.value,
            "comment": self.comment,
            "channel": self.channel,
            "reason": self.reason,
        }
        if self.args is not None or self.original_args is not None or self.patch is not None:
            data.update({name: getattr(self, name) for name in _EDIT_FIELDS})
        data.update({k: v for k, v in (("person", self.person), ("name", self.name)) if v})
        if self.on_behalf_of is not None:
            data["on_behalf_of"] = self.on_behalf_of
        return data

    def to_api(self) -> dict[str, Any]:
        return {**self.to_json(), "decided_at": iso(self.decided_at)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Decision:
        at = from_ts(d["decided_at"])
        assert at is not None
        return cls(
            outcome=Outcome(d["outcome"]),
            decided_by=d["decided_by"],
            decided_at=at,
            source=Source(d.get("source", "human")),
            comment=d.get("comment"),
            channel=d.get("channel"),
            reason=d.get("reason"),
            args=d.get("args"),
            original_args=d.get("original_args"),
            patch=d.get("patch"),
            person=d.get("person"),
            name=d.get("name"),
            on_behalf_of=d.get("on_behalf_of"),
        )

    @classmethod
    def from_api(cls, d: Mapping[str, Any]) -> Decision:
        """A decision as the HTTP API shows it (`decided_at` in RFC 3339)."""
        return cls.from_json({**d, "decided_at": parse_iso(str(d["decided_at"])).timestamp()})


class StepStatus(StrEnum):
    """A journaled step: succeeded (final: replay returns its output), failed, or suspended on an approval."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SUSPENDED = "suspended"


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One journaled step of a run."""

    run_id: str
    name: str
    status: StepStatus
    output: Any
    attempts: int
    started_at: datetime
    finished_at: datetime
    error: str | None = None

    def to_api(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "name": self.name,
            "status": self.status.value,
            "output": self.output,
            "attempts": self.attempts,
            "started_at": iso(self.started_at),
            "finished_at": iso(self.finished_at),
            "duration_ms": round((self.finished_at - self.started_at).total_seconds() * 1000, 3),
            "error": self.error,
        }

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> StepRecord:
        return cls(
            run_id=data["run_id"],
            name=data["name"],
            status=StepStatus(data["status"]),
            output=data.get("output"),
            attempts=int(data["attempts"]),
            started_at=parse_iso(data["started_at"]),
            finished_at=parse_iso(data["finished_at"]),
            error=data.get("error"),
        )
