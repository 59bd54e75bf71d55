"""Thin JSON handlers for the /v1 API: parse, call the service, render."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from aiohttp import web

from gateway.core import disclosure, rounds
from gateway.core.clock import iso
from gateway.core.errors import ValidationError
from gateway.core.models import Approval, Status
from gateway.core.traces import parse_traceparent
from gateway.http import schemas
from gateway.http.scope import operator, owner_filter, principal
from gateway.http.usecases import READS, READY, SERVICE, SIGNER
from gateway.service import Service
from gateway.service.commands import Authority

routes = web.RouteTableDef()
log = logging.getLogger("gateway.http")


def _service(request: web.Request) -> Service:
    return request.config_dict[SERVICE]


def _shown(request: web.Request, view: dict[str, Any]) -> dict[str, Any]:
    """An approval's view as this caller may read it: an agent's key is not shown what the
    operators' rules record about themselves (gateway.core.disclosure)."""
    return view if principal(request).is_operator else disclosure.approval(view)


def _suspend_body(service: Service, approval: Approval) -> dict[str, Any]:
    return {
        "id": approval.id,
        "status": approval.status.value,  # a replay after a decision says so (README "Idempotency")
        "resume_token": service.resumes.reply_token(approval),
        "deadline": iso(approval.deadline),
    }


@routes.post("/v1/suspend")
async def suspend(request: web.Request) -> web.Response:
    service = _service(request)
    req = schemas.parse_suspend(await schemas.read_json(request))
    if req.trace is None and "traceparent" in request.headers:  # the body's context first, else the header's
        headers = request.headers  # (malformed: ignored; `replace` only when there is one: it costs ~5 us)
        req = replace(req, trace=parse_traceparent(headers["traceparent"], headers.get("tracestate")))
    approval, created = await service.suspend(req, principal(request))
    # The same idempotency key (from the same principal) gets the same approval, token and
    # deadline, with its current status. Another principal's key is a 409: never another
    # agent's body or token.
    return web.json_response(_suspend_body(service, approval), status=201 if created else 200)


@routes.get("/v1/approvals")
async def list_approvals(request: web.Request) -> web.Response:
    q = request.query
    status = None
    if q.get("status"):
        try:
            status = Status(q["status"])
        except ValueError:
            raise ValidationError("status", f"must be one of {', '.join(s.value for s in Status)}") from None
    limit = _int_query(q.get("limit"), "limit", 100, 1, 1000)
    offset = _int_query(q.get("offset"), "offset", 0, 0, 10**9)
    items = await request.config_dict[READS].approvals(
        status=status, run_id=q.get("run_id") or None, limit=limit, offset=offset, agent=owner_filter(request)
    )
    views = [_shown(request, a.to_api()) for a in items]
    return web.json_response({"items": views, "limit": limit, "offset": offset})


def _int_query(value: str | None, name: str, default: int, low: int, high: int) -> int:
    if value is None or value == "":
        return default
    try:
        n = int(value)
    except ValueError:
        raise ValidationError(name, "must be an integer") from None
    if not low <= n <= high:
        raise ValidationError(name, f"must be between {low} and {high}")
    return n


@routes.get("/v1/approvals/{id}")
async def get_approval(request: web.Request) -> web.Response:
    service = _service(request)
    approval = await service.get(request.match_info["id"], principal(request))
    return web.json_response(_shown(request, await service.view(approval)))


@routes.get("/v1/approvals/{id}/events")
async def list_events(request: web.Request) -> web.Response:
    approval = await _service(request).get(request.match_info["id"], principal(request))
    items = [e.to_api() for e in await request.config_dict[READS].events(approval.id)]
    if not principal(request).is_operator:  # shadow verdicts and rule errors are the operators'
        items = disclosure.events(items)
    return web.json_response({"items": items})


@routes.post("/v1/approvals/{id}/decision")
async def decide(request: web.Request) -> web.Response:
    """An operator decides as itself (`operator:NAME`); `by` is only kept as `on_behalf_of`.
    With `args_hash` (the `current_args_hash` read), an approve on args changed since is a 409."""
    service, caller = _service(request), operator(request)
    body = schemas.parse_decision(await schemas.read_json(request))
    approval_id = request.match_info["id"]
    seen = None if body.args_hash is None else rounds.tag_of(request.config_dict[SIGNER], approval_id, body.args_hash)
    approval = await service.decide(
        approval_id,
        body.outcome,
        caller.identity,
        comment=body.comment,
        channel="api",
        authority=Authority.OPERATOR,
        on_behalf_of=body.on_behalf_of,
        args=body.args,
        seen=seen,
        seen_field="args_hash",
        grant=body.grant,
    )
    return web.json_response(await service.view(approval))


@routes.post("/v1/approvals/{id}/extend")
async def extend(request: web.Request) -> web.Response:
    """An operator extends the deadline as the policy's `extend` allows (403 beyond it)."""
    service, caller = _service(request), operator(request)
    duration, by, seen = schemas.parse_extend(await schemas.read_json(request))
    approval = await service.extend(
        request.match_info["id"], duration, caller.identity, channel="api", authority=Authority.OPERATOR, seen=seen
    )
    if by:
        log.info("approval %s extended by %s on behalf of %s", approval.id, caller.identity, by)
    return web.json_response(await service.view(approval))


@routes.post("/v1/approvals/{id}/cancel")
async def cancel(request: web.Request) -> web.Response:
    service, caller = _service(request), operator(request)
    body = await schemas.read_json(request) if request.body_exists else {}
    by, reason = schemas.parse_cancel(body)
    approval = await service.cancel(request.match_info["id"], caller.identity, reason, on_behalf_of=by)
    return web.json_response(await service.view(approval))


@routes.get("/v1/resume/{token}")
async def rehydrate(request: web.Request) -> web.Response:
    return web.json_response(await _service(request).resumes.rehydrate(request.match_info["token"]))


@routes.post("/v1/resume")
async def decide_by_token(request: web.Request) -> web.Response:
    token, outcome, comment = schemas.parse_token_decision(await schemas.read_json(request))
    approval = await _service(request).resumes.decide_by_token(token, outcome, comment)
    return web.json_response(disclosure.approval(approval.to_api()))  # a token holder is no operator


@routes.get("/healthz")
async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


@routes.get("/readyz")
async def readyz(request: web.Request) -> web.Response:
    ok = await request.config_dict[READY]()
    return web.json_response({"status": "ready" if ok else "not ready"}, status=200 if ok else 503)
