"""OpenAPI 3.1 description of every route. `tests/integration/test_openapi.py` fails when a
route of the app is missing here.

The routes, their summaries and their error codes are listed here; every body's schema is
generated from the contract's models (gateway.contract), the same ones that validate it."""

from __future__ import annotations

from typing import Any

from gateway import __version__, contract
from gateway.contract import ref

_ERROR = ref(contract.ErrorReply)
_ID = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    names = {
        400: "Bad request",
        401: "Unauthorized",
        403: "Forbidden (also operator_required, policy_not_allowed)",
        404: "Not found (also: another agent's approval)",
        408: "The body arrived too slowly (server.body_timeout)",
        409: "Conflict (also idempotency_conflict naming the field; ambiguous_run naming agent)",
        410: "Gone (token expired)",
        413: "Body too large",
        415: "Not JSON",
        503: "Not ready",
    }
    return {str(c): {"description": names[c], **_json(_ERROR)} for c in codes}


def _op(
    summary: str,
    ok: dict[str, Any],
    *errs: int,
    body: dict[str, Any] | None = None,
    params: list[dict[str, Any]] | None = None,
    public: bool = False,
    ok_code: str = "200",
    body_required: bool = True,
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": summary,
        "responses": {ok_code: {"description": "OK", **_json(ok)}, **_errors(*errs)},
    }
    if body is not None:
        op["requestBody"] = {"required": body_required, **_json(body)}
    if params:
        op["parameters"] = params
    if public:
        op["security"] = []
    return op


_SUSPEND, _SUSPENDED = ref(contract.SuspendBody), ref(contract.SuspendReply)
_APPROVAL = ref(contract.ApprovalView)
_DECISION, _EXTEND, _TOKEN_DECISION = (
    ref(contract.DecisionBody),
    ref(contract.ExtendBody),
    ref(contract.TokenDecisionBody),
)


_STEP, _STEP_VIEW = ref(contract.StepBody), ref(contract.StepView)
_RUN_ID = {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string"}}
_AGENT = {
    "name": "agent",
    "in": "query",
    "description": "operators: the agent whose records or run (run ids are per agent; empty: no agent's)",
    "schema": {"type": "string", "maxLength": 70},
}
_TOKEN_AUTH: list[dict[str, list[str]]] = [{"bearer": []}, {"resumeToken": []}]


def _worker_paths() -> dict[str, dict[str, Any]]:
    """Resume jobs and the run journal (gateway/http/jobs.py, gateway/http/runs.py)."""
    status = {"name": "status", "in": "query", "schema": {"enum": ["queued", "running", "succeeded", "failed"]}}
    view = {"name": "view", "in": "query", "schema": {"enum": ["raw", "display"]}}
    steps = _op("A run's journaled steps (view=display: outputs redacted)", {"type": "object"}, 400, 401, 403, 409, 410)
    steps["parameters"] = [_RUN_ID, view, _AGENT]
    put = _op(
        "Journal a step (the first successful record wins; returns the stored record)",
        _STEP_VIEW,
        400,
        401,
        403,
        408,
        409,
        410,
        body=_STEP,
        params=[_RUN_ID, {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}, _AGENT],
    )
    steps["security"] = put["security"] = _TOKEN_AUTH
    return {
        "/v1/jobs": {
            "get": _op(
                "List resume jobs (e.g. ?status=failed)", {"type": "object"}, 400, 401, 403, params=[status, _AGENT]
            )
        },
        "/v1/approvals/{id}/retry": {
            "post": _op(
                "Run a failed resume job again (operators)", {"type": "object"}, 401, 403, 404, 408, 409, params=[_ID]
            )
        },
        "/v1/approvals/{id}/cards/resend": {
            "post": _op(
                "Post a card again whose post failed for good or is uncertain (operators)",
                {"type": "object"},
                400,
                401,
                403,
                404,
                408,
                409,
                params=[_ID],
                body=ref(contract.ResendBody),
            )
        },
        "/v1/approvals/{id}/events/resend": {
            "post": _op(
                "Send again the outbound events that were given up (operators; the body may be left out)",
                {"type": "object"},
                400,
                401,
                403,
                404,
                408,
                409,
                params=[_ID],
                body=ref(contract.EventsResendBody),
                body_required=False,
            )
        },
        "/v1/runs/{run_id}/steps": {"get": steps},
        "/v1/runs/{run_id}/steps/{name}": {"put": put},
    }


def _grant_paths() -> dict[str, dict[str, Any]]:
    """Standing grants (gateway/http/grants.py): made by an approve's `grant`, listed and revoked here."""
    every = {"name": "all", "in": "query", "schema": {"enum": ["true", "false"]}}
    listing = _op(
        "List standing grants (operators; ?all=true: revoked and expired too)", {"type": "object"}, 400, 401, 403
    )
    listing["parameters"] = [every]
    revoke = _op("Revoke a standing grant (operators)", {"type": "object"}, 401, 403, 404, params=[_ID])
    return {"/v1/grants": {"get": listing}, "/v1/grants/{id}": {"delete": revoke}}


def _delegation_paths() -> dict[str, dict[str, Any]]:
    """Delegations (gateway/http/delegations.py): who decides for whom, and until when."""
    every = {"name": "all", "in": "query", "schema": {"enum": ["true", "false"]}}
    of = {"name": "of", "in": "query", "schema": {"type": "string"}, "description": "an identity: its person's only"}
    listing = _op("List delegations (operators; ?all=true: revoked and ended too)", {"type": "object"}, 400, 401, 403)
    listing["parameters"] = [every, of]
    create = _op(
        "Let a delegate decide for a delegator until a time (operators)",
        {"type": "object"},
        400,
        401,
        403,
        408,
        413,
        415,
        body=ref(contract.DelegationBody),
        ok_code="201",
    )
    one = _op("A delegation with its audit trail (operators)", {"type": "object"}, 401, 403, 404, params=[_ID])
    revoke = _op("Revoke a delegation (operators)", {"type": "object"}, 401, 403, 404, params=[_ID])
    return {
        "/v1/delegations": {"get": listing, "post": create},
        "/v1/delegations/{id}": {"get": one, "delete": revoke},
    }


def spec(extra_paths: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {
        "/v1/suspend": {
            "post": _op(
                "Suspend a run on an approval (idempotent by key; run ids and keys are per agent)",
                _SUSPENDED,
                400,
                401,
                403,
                408,
                409,
                413,
                415,
                body=_SUSPEND,
                ok_code="201",
            )
        },
        "/v1/approvals": {
            "get": _op(
                "List approvals",
                {"type": "object"},
                400,
                401,
                403,
                params=[
                    _AGENT,
                    {"name": "status", "in": "query", "schema": {"type": "string"}},
                    {"name": "run_id", "in": "query", "schema": {"type": "string"}},
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {"type": "integer", "minimum": 1, "maximum": 1000},
                    },
                    {"name": "offset", "in": "query", "schema": {"type": "integer", "minimum": 0}},
                ],
            )
        },
        "/v1/approvals/{id}": {
            "get": _op("Get an approval with its cards and resume job", _APPROVAL, 401, 404, params=[_ID])
        },
        "/v1/approvals/{id}/events": {
            "get": _op(
                "The approval's audit trail (an agent's key: without shadow verdicts and rule errors)",
                ref(contract.EventList),
                401,
                404,
                params=[_ID],
            )
        },
        "/v1/approvals/{id}/decision": {
            "post": _op(
                "Decide, as the operator whose key this is (first valid decision wins)",
                _APPROVAL,
                400,
                401,
                403,
                404,
                408,
                409,
                body=_DECISION,
                params=[_ID],
            )
        },
        "/v1/approvals/{id}/extend": {
            "post": _op(
                "Extend the deadline by one of the policy's `extend` durations (operators; 403 beyond it)",
                _APPROVAL,
                400,
                401,
                403,
                404,
                408,
                409,
                body=_EXTEND,
                params=[_ID],
            )
        },
        "/v1/approvals/{id}/cancel": {
            "post": _op(
                "Cancel a waiting approval (operators)",
                _APPROVAL,
                400,
                401,
                403,
                404,
                408,
                409,
                params=[_ID],
                body=ref(contract.CancelBody),
            )
        },
        "/v1/approvals/decisions": {
            "post": _op(
                "Decide several approvals, each on its own as the operator whose key this is"
                f" (at most {contract.BATCH_ITEMS}; one result per item: ok with its status, or its error)",
                ref(contract.BatchDecisionReply),
                400,
                401,
                403,
                408,
                413,
                415,
                body=ref(contract.BatchDecisionBody),
            )
        },
        "/v1/resume/{token}": {
            "get": _op(
                "Rehydrate: approval, decision, args and state",
                {"type": "object"},
                401,
                410,
                public=True,
                params=[{"name": "token", "in": "path", "required": True, "schema": {"type": "string"}}],
            )
        },
        "/v1/resume": {
            "post": _op(
                "Decide by holding the resume token",
                _APPROVAL,
                400,
                401,
                403,
                409,
                410,
                body=_TOKEN_DECISION,
                public=True,
            )
        },
        "/v1/rules/evaluate": {
            "post": _op(
                "Evaluate the rules for a suspend body plus `agent`, with its budgets; suspends nothing (operators)",
                ref(contract.RuleResultView),
                400,
                401,
                403,
                408,
                413,
                415,
                body=ref(contract.EvaluateBody),
            )
        },
        **_worker_paths(),
        **_grant_paths(),
        **_delegation_paths(),
        "/healthz": {"get": _op("Liveness", {"type": "object"}, public=True)},
        "/readyz": {"get": _op("Readiness (store reachable, loops running)", {"type": "object"}, 503, public=True)},
        "/openapi.json": {"get": _op("This document", {"type": "object"}, public=True)},
    }
    for path, ops in (extra_paths or {}).items():
        paths.setdefault(path, {}).update(ops)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "hitl-gateway",
            "version": __version__,
            "description": "Human-in-the-loop approval gateway for AI agents.",
        },
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "resumeToken": {"type": "apiKey", "in": "header", "name": "X-HITL-Resume-Token"},
            },
            "schemas": contract.components(),
        },
    }
