"""The request bodies of the HTTP API, defined once: validation, `/openapi.json`,
docs/reference/http.md, and the parity of the SDK and the MCP tool (tests/unit/test_api_contract.py).

Field order is the order of the hand parsers' checks (the first problem found is the 400), not
the order a reader expects; `gateway.contract.schema` lists the properties as declared.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

from gateway.contract.fields import (
    By,
    Comment,
    Deadline,
    Duration,
    Item,
    Missing,
    NotBlank,
    Outcome,
    Since,
    Stamp,
    Until,
    check,
    json_object,
    problem,
    strings,
    text,
)
from gateway.core.models import StepStatus


class RequestBody(BaseModel):
    """Strict (no coercion: "1" is not 1), closed (an unknown field is a 400 naming it)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, arbitrary_types_allowed=True)


class InlinePolicy(BaseModel):
    """An inline `policy` object (the service checks it: gateway.service.policies). Only its
    schema is used here; tests/unit/test_api_contract.py keeps its keys those the service takes."""

    model_config = ConfigDict(extra="forbid")
    timeout: str | None = Field(None, examples=["30m", "never"])
    on_timeout: Literal["approve", "reject", "escalate"] | None = None
    escalate_to: list[str] | None = None
    escalation_timeout: str | None = None
    after_escalation: Literal["approve", "reject"] | None = None
    remind: list[str] | None = None
    quorum: int | None = Field(None, ge=1, le=100)
    name: str | None = Field(
        None,
        description="a label for reasons and events; a configured policy's name means that policy,"
        " with the keys its agent_may_set allows",
    )


_POLICY_SCHEMA = {"oneOf": [{"type": "string"}, {"$ref": "#/components/schemas/InlinePolicy"}, {"type": "null"}]}
_ARGS_SCHEMA = {
    "type": ["object", "null"],
    "description": "JSON Schema 2020-12 the args and every edit must validate: references only within it"
    " (#...), at most 64 KiB, 32 levels and 1,000 subschemas, patterns in re2 syntax",
}
_EDITABLE = {
    "oneOf": [{"type": "boolean"}, {"type": "array", "items": {"type": "string"}}, {"type": "null"}],
    "description": "true, or the top-level args an approver may change before approving",
}


class SuspendBody(RequestBody):
    """`POST /v1/suspend`: suspend a run on an approval."""

    args: Annotated[
        dict[str, Any] | None, json_object("must be a JSON object"), Field(description="the step's args")
    ] = None
    channels: Annotated[
        Annotated[list[Item], Field(min_length=1, max_length=20)] | None,
        strings(20, at_least_one=True),
        Field(examples=[["web", "<kind>:<target>"]], description="default: [web]"),
    ] = None
    worker: Annotated[str | None, check(lambda v: v is None or isinstance(v, str), "must be a worker name")] = None
    run_id: Annotated[str, NotBlank, text(200, required=True)]
    step: Annotated[str, NotBlank, text(200, required=True)]
    title: Annotated[str, NotBlank, text(300, required=True)]
    summary: Annotated[str | None, text(4000)] = None
    state: Annotated[Any, Field(description="any JSON: handed back on resume")] = None
    approvers: Annotated[
        Annotated[list[Item], Field(max_length=50)] | None,
        strings(50),
        Field(
            examples=[["web:alice", "<kind>:<id>", "group:<NAME>"]],
            description="identities (`kind:id`) or configured groups (`group:NAME`) who may decide",
        ),
    ] = None
    policy: Annotated[
        str | dict[str, Any] | None,
        check(lambda v: v is None or isinstance(v, str | dict), "must be a policy name or an inline policy object"),
        WithJsonSchema(_POLICY_SCHEMA),
    ] = None
    idempotency_key: Annotated[str | None, text(200, "per agent (and per principal)")] = None
    requested_by: Annotated[str | None, text(200)] = None
    deadline: Deadline = None  # a datetime once valid
    args_schema: Annotated[Any, WithJsonSchema(_ARGS_SCHEMA)] = None  # checked by the service
    editable: Annotated[Any, WithJsonSchema(_EDITABLE)] = None  # checked by the service
    code_version: Annotated[
        str | None, text(100, "the agent code suspending: a worker's `accepts` globs must match it")
    ] = None
    context: Annotated[
        dict[str, Any] | None,
        json_object("must be a JSON object"),
        Field(description="what the agent says about the call, for the gateway's rules (`context.*`): untrusted"),
    ] = None
    traceparent: Annotated[
        str | None,
        check(lambda v: v is None or isinstance(v, str), "must be a string (a W3C traceparent)"),
        Field(
            examples=["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"],
            description="the agent's W3C trace context (else the `traceparent` header): the approval's spans and"
            " its worker continue that trace; a malformed one is ignored (a new trace begins)",
        ),
    ] = None
    tracestate: Annotated[
        str | None,
        check(lambda v: v is None or isinstance(v, str), "must be a string (a W3C tracestate)"),
        Field(description="with `traceparent`: vendors' trace state, handed to the worker as TRACESTATE"),
    ] = None


ArgsHash = Annotated[
    str | None,
    check(
        lambda v: v is None or (isinstance(v, str) and 0 < len(v) <= 128),
        "must be the approval's current_args_hash (a string)",
    ),
    Field(
        min_length=1,
        max_length=128,
        description="the approval's current_args_hash as read: an approve on args changed since is a 409"
        " stale_round (a reject is a veto on any args)",
    ),
]


class DecisionBody(RequestBody):
    """`POST /v1/approvals/{id}/decision`. `args_hash`: the `current_args_hash` of the approval
    the caller read; an approve on other args is then a 409 (`stale_round`). `grant`: "and allow
    the same for 1h" (or "for this run"), as the approval's policy offers."""

    outcome: Outcome
    args: Annotated[
        dict[str, Any] | None,
        json_object("must be a JSON object (the edited args)"),
        Field(description="approve with changes: the edited args (editable fields only)"),
    ] = None
    args_hash: ArgsHash = None
    by: By = None
    comment: Comment = None
    grant: Annotated[
        str | None,
        text(16, 'a standing grant with the approve: one of the policy\'s `grants`, like "1h" or "run"'),
    ] = None


BATCH_ITEMS = 100  # items per batch decision, on the API and in the web inbox (gateway.service.batch)


class DecisionItem(RequestBody):
    """One item of `POST /v1/approvals/decisions`: what `POST /v1/approvals/{id}/decision` takes
    for that id (no edited args, no grant: those are decided one at a time). A bad item is that
    item's error in the reply; the other items are decided."""

    id: Annotated[str, NotBlank, text(200, "the approval's id", required=True)]
    outcome: Outcome
    comment: Comment = None
    args_hash: ArgsHash = None


def _items(value: Any) -> Any:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise problem("must be a list of objects, each {id, outcome, comment?, args_hash?}")
    if not value:
        raise problem("must hold at least one item")
    if len(value) > BATCH_ITEMS:
        raise problem(f"at most {BATCH_ITEMS} items per batch, got {len(value)}: send the rest in another")
    return value


class BatchDecisionBody(RequestBody):
    """`POST /v1/approvals/decisions` (operators): several decisions, each its own, as
    `POST /v1/approvals/{id}/decision` would take it alone. A body that is not this shape is a
    400 and decides nothing; an item that cannot be decided is that item's error."""

    items: Annotated[
        list[dict[str, Any]],
        BeforeValidator(_items),
        Missing("must be a list of objects, each {id, outcome, comment?, args_hash?}"),
        WithJsonSchema(
            {
                "type": "array",
                "items": {"$ref": "#/components/schemas/DecisionItem"},
                "minItems": 1,
                "maxItems": BATCH_ITEMS,
                "description": "decided in order, each on its own",
            }
        ),
    ]


class ExtendBody(RequestBody):
    """`POST /v1/approvals/{id}/extend`: by one of the policy's `extend` durations."""

    duration: Duration  # a timedelta once valid
    by: By = None
    extensions: int | None = Field(
        None,
        ge=0,
        le=1000,
        description="the extensions the caller saw: refused with 409 (extended_meanwhile) if there are more"
        " now, so that a request sent again after a lost answer extends once",
    )


class CancelBody(RequestBody):
    """`POST /v1/approvals/{id}/cancel` (the body is optional)."""

    by: By = None
    reason: Comment = None


class ResendBody(RequestBody):
    """`POST /v1/approvals/{id}/cards/resend`."""

    channel: Annotated[str, NotBlank, text(200, required=True)]
    by: By = None


class EventsResendBody(RequestBody):
    """`POST /v1/approvals/{id}/events/resend` (operators): the body may be left out."""

    webhook: Annotated[
        str | None, text(64, "the webhook's name, as on the dashboard: its events alone (default: every webhook)")
    ] = None
    by: By = None


class TokenDecisionBody(RequestBody):
    """`POST /v1/resume`: decide by holding the resume token."""

    token: Annotated[str, NotBlank, text(2000, required=True)]
    outcome: Outcome
    comment: Comment = None


class DelegationBody(RequestBody):
    """`POST /v1/delegations` (operators): `delegate` decides for `delegator` from `from`
    (default: now) until `until` (at most 90 days later). The delegate decides only what the
    delegator may, and never an approval either of them requested."""

    delegator: Annotated[str, NotBlank, text(200, "whose approvals: an identity like web:alice", required=True)]
    delegate: Annotated[str, NotBlank, text(200, "who decides for them: an identity like web:bob", required=True)]
    starts_at: Annotated[Since, Field(alias="from")] = None
    until: Until
    reason: Comment = None


def _step_status(value: Any) -> StepStatus:
    try:
        return StepStatus(value)
    except ValueError:
        raise problem("must be one of " + ", ".join(s.value for s in StepStatus)) from None


class StepBody(RequestBody):
    """`PUT /v1/runs/{run_id}/steps/{name}`: journal a step (the first successful record wins).
    `name`, `run_id` and `duration_ms` are taken (a step record read back has them) and ignored:
    the path names the step."""

    status: Annotated[
        StepStatus, BeforeValidator(_step_status), WithJsonSchema({"enum": [s.value for s in StepStatus]})
    ] = StepStatus.SUCCEEDED
    attempts: Annotated[
        int,
        check(lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "must be a non-negative integer"),
        Field(ge=0),
    ] = 1
    started_at: Stamp  # a datetime once valid
    finished_at: Stamp
    error: Comment = None
    output: Annotated[Any, Field(description="any JSON: what the step returned")] = None
    name: Annotated[Any, Field(description="ignored (a record read back has it): the path names the step")] = None
    run_id: Annotated[Any, Field(description="ignored: the path names the run")] = None
    duration_ms: Annotated[Any, Field(description="ignored")] = None


class EvaluateBody(SuspendBody):
    """`POST /v1/rules/evaluate` (operators): a suspend body plus the `agent` whose suspend it
    would be; evaluated with that agent's budgets, nothing suspended. `run_id` and `title` may be
    left out (the rules read `run_id` as empty)."""

    run_id: Annotated[str | None, text(200)] = None  # type: ignore[assignment]
    title: Annotated[str | None, text(300)] = None  # type: ignore[assignment]
    agent: Annotated[
        str,
        NotBlank,
        text(70, "the agent's name (or agent:NAME) the suspend would come from", required=True),
    ]


REQUESTS: tuple[type[RequestBody], ...] = (
    SuspendBody,
    EvaluateBody,
    DecisionBody,
    DecisionItem,
    BatchDecisionBody,
    ExtendBody,
    CancelBody,
    ResendBody,
    EventsResendBody,
    TokenDecisionBody,
    StepBody,
    DelegationBody,
)
