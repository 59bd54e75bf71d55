"""The run journal over HTTP, for remote agents: GET the steps, PUT one step (first record wins).

Callers hold an API key, or the resume token of one of the run's approvals
(`X-HITL-Resume-Token`, what a worker gets in HITL_RESUME_TOKEN), which opens that run only.
Run ids are per agent (gateway.service.namespaces): an agent's key reaches its own run of that
id, a token its approval's, an operator the one run of that id or the agent `?agent=` names.
"""

from __future__ import annotations

from aiohttp import web

from gateway.core.errors import InvalidToken
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
    body = await schemas.read_json(request)
    step = schemas.parse_step(body, request.match_info["run_id"], request.match_info["name"])
    rt, _, namespace = await _authorize(request)
    stored = await rt.store.record_step(step, namespace=namespace)
    return web.json_response(stored.to_api())
