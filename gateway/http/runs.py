"""The run journal over HTTP, for remote agents: GET the steps, PUT one step (first record wins).

Callers hold an API key, or the resume token of one of the run's approvals
(`X-HITL-Resume-Token`, what a worker gets in HITL_RESUME_TOKEN), which opens that run only.
The use case (gateway.service.journal.RunJournal) authorizes the caller and finds the run.
"""

from __future__ import annotations

from aiohttp import web

from gateway.http import schemas
from gateway.http.scope import principal
from gateway.http.usecases import JOURNAL
from gateway.service.journal import RecordStep, RunCaller

routes = web.RouteTableDef()
TOKEN_HEADER = "X-HITL-Resume-Token"


def _caller(request: web.Request) -> RunCaller:
    """A resume token (the middleware let it through without an API key), else the API key."""
    token = request.headers.get(TOKEN_HEADER)
    return RunCaller(None if token is not None else principal(request), token, request.query.get("agent"))


@routes.get("/v1/runs/{run_id}/steps")
async def list_steps(request: web.Request) -> web.Response:
    """Raw outputs (for replay); `?view=display` gives the redacted display copy (dashboards)."""
    run_id, display = request.match_info["run_id"], request.query.get("view") == "display"
    items = await request.config_dict[JOURNAL].steps(run_id, _caller(request), display=display)
    return web.json_response({"run_id": run_id, "items": items})


@routes.put("/v1/runs/{run_id}/steps/{name}")
async def record_step(request: web.Request) -> web.Response:
    step = schemas.parse_step(
        await schemas.read_json(request), request.match_info["run_id"], request.match_info["name"]
    )
    stored = await request.config_dict[JOURNAL].record(RecordStep(step, _caller(request)))
    return web.json_response(stored.to_api())
