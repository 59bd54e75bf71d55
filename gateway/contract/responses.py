"""The response bodies `/openapi.json` describes: the records a client reads back.

Only their schemas are used (the handlers render the records' own `to_api()`);
tests/integration/test_openapi.py checks real replies against them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

StatusName = Literal["waiting_approval", "approved", "rejected", "timed_out", "cancelled"]


class SuspendReply(BaseModel):
    """The reply to a suspend (201 created; 200 for the same idempotency key again)."""

    id: str
    status: StatusName
    resume_token: str
    deadline: datetime | None


class Quorum(BaseModel):
    required: int | None = None
    approvals: int | None = None
    text: str | None = Field(None, examples=["1 of 2 approvals"])


class Reminder(BaseModel):
    at: str | None = None
    done: bool | None = None


class ApprovalView(BaseModel):
    """An approval as `GET /v1/approvals/{id}` shows it (more fields than listed may appear)."""

    id: str
    status: StatusName
    run_id: str
    step: str
    decision: dict[str, Any] | None = Field(
        None,
        description=(
            "for an agent's key or a resume token, a decision by `rule:default` gives the default as its"
            " `reason` (`rules.default = deny`): a rule's evaluation error is shown to operators only"
        ),
    )
    deadline: str | None = None
    next_wake_at: str | None = None
    policy: dict[str, Any] | None = None
    quorum: Quorum | None = None
    reminders: list[Reminder] | None = None


class EventView(BaseModel):
    """One event of an approval's trail, oldest first (`Event.to_api`)."""

    id: int = Field(
        description=(
            "for an operator's key, the event's id in the store (one sequence for every approval); for an agent's"
            " key, its position in the trail the agent reads (1, 2, ...), so that hidden events leave no gap"
        )
    )
    kind: str = Field(examples=["suspended", "approved"])
    at: str
    actor: str | None
    channel: str | None
    data: dict[str, Any] = Field(
        description=(
            "the event's facts; `rule_errors` (conditions that failed to evaluate) appear for an operator's key only"
        )
    )


class EventList(BaseModel):
    """`GET /v1/approvals/{id}/events`. An agent's key reads its own approval's trail without the
    operators' own rule records: no `rule_shadow` event (what a rule not yet enforced would have
    done) and no `rule_errors`; an operator's key reads them all."""

    items: list[EventView]


class ErrorDetail(BaseModel):
    code: str
    message: str
    details: dict[str, Any] | None = None


class ErrorReply(BaseModel):
    """Every 4xx and 5xx: `error.code` is stable, `error.message` names the problem."""

    error: ErrorDetail


class StepView(BaseModel):
    """A journaled step, as stored."""

    run_id: str | None = None
    name: str | None = None
    status: Literal["succeeded", "failed", "suspended"] | None = None
    output: Any = None
    attempts: int | None = Field(None, ge=0)
    started_at: datetime
    finished_at: datetime
    error: str | None = None


class RuleResultView(BaseModel):
    """What the rules answer for a suspend (`POST /v1/rules/evaluate`; `RuleResult.as_dict`)."""

    outcome: Literal["allow", "deny", "ask"]
    rule: str | None = Field(description="the enforced rule that decided; null: rules.default")
    reason: str
    policy: str | None
    channels: list[str]
    approvers: list[str]
    shadow: list[dict[str, Any]] = Field(description="shadow rules that matched: {rule, outcome, reason}")
    errors: list[dict[str, Any]] = Field(description="conditions that failed to evaluate: {rule, message}")
    rules_hash: str


class BatchItemResult(BaseModel):
    """One item's result: `ok` with the approval's `status` after the decision, or its `error`
    (the code and message a single decision would have answered)."""

    id: str | None = Field(description="the item's id (null when the item had none)")
    ok: bool
    status: StatusName | None = Field(None, description="when ok: the approval's status after this decision")
    error: ErrorDetail | None = Field(None, description="when not ok")


class BatchDecisionReply(BaseModel):
    """The reply to `POST /v1/approvals/decisions`: one result per item, in the items' order."""

    items: list[BatchItemResult]


RESPONSES: tuple[type[BaseModel], ...] = (
    SuspendReply,
    ApprovalView,
    EventList,
    ErrorReply,
    StepView,
    RuleResultView,
    BatchDecisionReply,
)
