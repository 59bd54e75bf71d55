"""Operators' repairs over HTTP: list jobs, retry a failed one, re-post a card, send given-up
outbound events again. The use cases (gateway.service.jobs, gateway.service.deliveries,
gateway.service.events) authorize the caller."""

from __future__ import annotations

from aiohttp import web

from gateway.core.errors import ValidationError
from gateway.core.models import JobStatus
from gateway.http import schemas
from gateway.http.api import _int_query
from gateway.http.scope import owner_filter, principal
from gateway.http.usecases import DELIVERIES, JOBS, WEBHOOKS
from gateway.service.deliveries import ResendCard
from gateway.service.events import ResendEvents
from gateway.service.jobs import RetryJob

routes = web.RouteTableDef()


@routes.get("/v1/jobs")
async def list_jobs(request: web.Request) -> web.Response:
    status = None
    if request.query.get("status"):
        try:
            status = JobStatus(request.query["status"])
        except ValueError:
            raise ValidationError("status", f"must be one of {', '.join(s.value for s in JobStatus)}") from None
    limit = _int_query(request.query.get("limit"), "limit", 100, 1, 1000)
    jobs = await request.config_dict[JOBS].find(status, limit, agent=owner_filter(request))
    return web.json_response({"items": [j.to_api() for j in jobs], "limit": limit})


@routes.post("/v1/approvals/{id}/retry")
async def retry(request: web.Request) -> web.Response:
    caller = principal(request)
    body = await schemas.read_json(request) if request.body_exists else {}
    cmd = RetryJob(request.match_info["id"], caller.identity, schemas.on_behalf_of(body))
    job = await request.config_dict[JOBS].retry(cmd)
    return web.json_response(job.to_api())


@routes.post("/v1/approvals/{id}/cards/resend")
async def resend(request: web.Request) -> web.Response:
    """Post a card again whose post failed for good or is `uncertain` (see docs/channels.md)."""
    caller = principal(request)
    channel, by = schemas.parse_resend(await schemas.read_json(request))
    await request.config_dict[DELIVERIES].resend(ResendCard(request.match_info["id"], channel, caller.identity, by))
    return web.json_response({"approval_id": request.match_info["id"], "channel": channel, "status": "pending"})


@routes.post("/v1/approvals/{id}/events/resend")
async def resend_events(request: web.Request) -> web.Response:
    """Send again the approval's outbound events that were given up (see docs/events.md)."""
    caller = principal(request)
    body = await schemas.read_json(request) if request.body_exists else {}
    cmd = ResendEvents.by_operator(request.match_info["id"], body, caller.identity)
    resent = await request.config_dict[WEBHOOKS].resend(cmd)
    return web.json_response(resent.to_api())
