"""The run journal over HTTP, for remote agents: GET the steps, PUT one step (first record wins).

Callers hold an API key, or the resume token of one of the run's approvals
(`X-HITL-Resume-Token`, what a worker gets in HITL_RESUME_TOKEN), which opens that run only.
Run ids are per agent (gateway.service.namespaces): an agent's key reaches its own run of that
id, a token its approval's, an operator the one run of that id or the agent `?agent=` names.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from aiohttp import web

from gateway.core.errors import InvalidToken, ValidationError
from gateway.core.models import StepRecord, StepStatus
from gateway.http import schemas
from gateway.http.keys import RUNTIME
from gateway.http.scope import principal
from gateway.runtime import Runtime
from gateway.service.namespaces import run_namespace

routes = web.RouteTableDef()
TOKEN_HEADER = "X-HITL-Resume-Token"


async def _authorize(request: web.Request) -> tuple[Runtime, str, str]:
    """The runtime, the run id and the namespace of the run the caller reaches."""
    rt = request.app[RUNTIME]
    run_id = request.match_info["run_id"]
    token = request.headers.get(TOKEN_HEADER)
    if token is not None:  # the middleware let it through without an API key: the token must fit
        approval = await rt.service.approval_for_token(token)
        if approval.run_id != run_id:
            raise InvalidToken("the resume token belongs to another run")
        return rt, run_id, approval.namespace
    namespace = await run_namespace(rt.store, run_id, principal(request), request.query.get("agent"))
    return rt, run_id, namespace


def _time(body: dict[str, Any], name: str) -> datetime:
    raw = body.get(name)
    try:
        value = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(name, "must be an ISO 8601 date-time with a timezone") from None
    if value.tzinfo is None:
        raise ValidationError(name, "must have a timezone")
    return value


def parse_step(body: dict[str, Any], run_id: str, name: str) -> StepRecord:
    allowed = {"status", "output", "attempts", "started_at", "finished_at", "error", "name", "run_id", "duration_ms"}
    extra = sorted(set(body) - allowed)
    if extra:
        raise ValidationError(extra[0], f"unknown field (allowed: {', '.join(sorted(allowed))})")
    try:
        status = StepStatus(body.get("status", "succeeded"))
    except ValueError:
        raise ValidationError("status", f"must be one of {', '.join(s.value for s in StepStatus)}") from None
    attempts = body.get("attempts", 1)
    if not isinstance(attempts, int) or isinstance(attempts, bool) or attempts < 0:
        raise ValidationError("attempts", "must be a non-negative integer")
    return StepRecord(
        run_id=run_id,
        name=name,
        status=status,
        output=body.get("output"),
        attempts=attempts,
        started_at=_time(body, "started_at"),
        finished_at=_time(body, "finished_at"),
        error=schemas.opt_text(body, "error"),
    )


@routes.get("/v1/runs/{run_id}/steps")
async def list_steps(request: web.Request) -> web.Response:
    """Raw outputs (for replay); `?view=display` gives the redacted display copy (dashboards)."""
    rt, run_id, namespace = await _authorize(request)
    items = [s.to_api() for s in await rt.store.get_steps(run_id, namespace=namespace)]
    if request.query.get("view") == "display":
        items = [{**i, "output": rt.service.redactor.value(i["output"])} for i in items]
    return web.json_response({"run_id": run_id, "items": items})


@routes.put("/v1/runs/{run_id}/steps/{name}")
async def record_step(request: web.Request) -> web.Response:
    step = parse_step(await schemas.read_json(request), request.match_info["run_id"], request.match_info["name"])
    rt, _, namespace = await _authorize(request)
    stored = await rt.store.record_step(step, namespace=namespace)
    return web.json_response(stored.to_api())
