"""Operators' repairs and run journals over HTTP: list jobs, retry a failed one, re-post a card,
read and write steps."""

from __future__ import annotations

from aiohttp import web

from gateway.core.errors import ValidationError
from gateway.core.models import JobStatus
from gateway.delivery.outbox import resend_card
from gateway.http import schemas
from gateway.http.api import _int_query
from gateway.http.keys import RUNTIME
from gateway.http.scope import operator, owner_filter
from gateway.jobs.worker import retry_job

routes = web.RouteTableDef()


@routes.get("/v1/jobs")
async def list_jobs(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    status = None
    if request.query.get("status"):
        try:
            status = JobStatus(request.query["status"])
        except ValueError:
            raise ValidationError("status", f"must be one of {', '.join(s.value for s in JobStatus)}") from None
    limit = _int_query(request.query.get("limit"), "limit", 100, 1, 1000)
    jobs = await rt.store.list_jobs(status, limit, agent=owner_filter(request))
    return web.json_response({"items": [j.to_api() for j in jobs], "limit": limit})


@routes.post("/v1/approvals/{id}/retry")
async def retry(request: web.Request) -> web.Response:
    rt, caller = request.app[RUNTIME], operator(request)
    body = await schemas.read_json(request) if request.body_exists else {}
    by = schemas.on_behalf_of(body)
    job = await retry_job(rt.service, request.match_info["id"], caller.identity, on_behalf_of=by)
    return web.json_response(job.to_api())


@routes.post("/v1/approvals/{id}/cards/resend")
async def resend(request: web.Request) -> web.Response:
    """Post a card again whose post failed for good or is `uncertain` (see docs/channels.md)."""
    rt, caller = request.app[RUNTIME], operator(request)
    channel, by = schemas.parse_resend(await schemas.read_json(request))
    await resend_card(rt.store, request.match_info["id"], channel, caller.identity, rt.clock.now(), on_behalf_of=by)
    rt.outbox.notify()
    return web.json_response({"approval_id": request.match_info["id"], "channel": channel, "status": "pending"})
