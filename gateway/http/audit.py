"""`GET /v1/audit/export` (streamed JSON Lines, docs/audit.md) and `POST /v1/audit/checkpoint`,
for operators only: the trail names every approver and every agent."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from aiohttp import web

from gateway.core.errors import ValidationError
from gateway.http.scope import operator
from gateway.http.usecases import AUDIT

routes = web.RouteTableDef()
_LINES_PER_WRITE = 256  # lines gathered per socket write: a large export is not 10^6 tiny writes


def _instant(request: web.Request, name: str) -> float | None:
    raw = request.query.get(name)
    if not raw:
        return None
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(name, "must be an RFC 3339 date-time, like 2026-08-02T10:00:00Z") from None
    if moment.tzinfo is None:
        raise ValidationError(name, "must carry a time zone (Z or +01:00)")
    return moment.timestamp()


@routes.get("/v1/audit/export")
async def export(request: web.Request) -> web.StreamResponse:
    operator(request)
    since, until = _instant(request, "since"), _instant(request, "until")
    if since is not None and until is not None and until < since:
        raise ValidationError("until", "must not be before since")
    audit = request.config_dict[AUDIT]
    response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson; charset=utf-8"})
    await response.prepare(request)
    batch: list[str] = []
    async for line in audit.export(since, until):
        batch.append(line)
        if len(batch) >= _LINES_PER_WRITE:
            await response.write("".join(batch).encode("utf-8"))
            batch = []
    if batch:
        await response.write("".join(batch).encode("utf-8"))
    await response.write_eof()
    return response


@routes.post("/v1/audit/checkpoint")
async def checkpoint(request: web.Request) -> web.Response:
    operator(request)
    made = await request.config_dict[AUDIT].seal()
    return web.json_response(made.to_json() | {"leaves": len(made.leaves)})


def _op(summary: str, media: str = "application/json") -> dict[str, Any]:
    return {
        "summary": summary,
        "responses": {
            "200": {"description": "OK", "content": {media: {"schema": {"type": "string"}}}},
            "400": {"description": "Bad request"},
            "401": {"description": "No or bad key"},
            "403": {"description": "Not an operator"},
        },
    }


_RANGE = [{"name": n, "in": "query", "schema": {"type": "string", "format": "date-time"}} for n in ("since", "until")]
OPENAPI: dict[str, dict[str, Any]] = {
    "/v1/audit/export": {
        "get": _op(
            "The audit trail as JSON Lines: events, hashes, approvals rows, checkpoints (operators)",
            "application/x-ndjson",
        )
        | {"parameters": _RANGE}
    },
    "/v1/audit/checkpoint": {"post": _op("Seal and sign the current chain heads now (operators)")},
}
