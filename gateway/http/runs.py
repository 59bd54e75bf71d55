"""The run journal over HTTP, for remote agents: GET the steps, PUT one step (first record wins).

Callers hold an API key, or the resume token of one of the run's approvals
(`X-HITL-Resume-Token`, what a worker gets in HITL_RESUME_TOKEN), which opens that run only.
The use case (gateway.service.journal.RunJournal) authorizes the caller and finds the run.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from aiohttp import web

from gateway.core.errors import ValidationError
from gateway.core.models import StepRecord, StepStatus
from gateway.http import schemas
from gateway.http.scope import principal
from gateway.service.journal import RecordStep, RunCaller, RunJournal

routes = web.RouteTableDef()
TOKEN_HEADER = "X-HITL-Resume-Token"
JOURNAL = web.AppKey("journal", RunJournal)


def _caller(request: web.Request) -> RunCaller:
    """A resume token (the middleware let it through without an API key), else the API key."""
    token = request.headers.get(TOKEN_HEADER)
    return RunCaller(None if token is not None else principal(request), token, request.query.get("agent"))


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
    run_id, display = request.match_info["run_id"], request.query.get("view") == "display"
    items = await request.app[JOURNAL].steps(run_id, _caller(request), display=display)
    return web.json_response({"run_id": run_id, "items": items})


@routes.put("/v1/runs/{run_id}/steps/{name}")
async def record_step(request: web.Request) -> web.Response:
    step = parse_step(await schemas.read_json(request), request.match_info["run_id"], request.match_info["name"])
    stored = await request.app[JOURNAL].record(RecordStep(step, _caller(request)))
    return web.json_response(stored.to_api())
