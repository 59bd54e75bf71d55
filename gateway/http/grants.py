"""Standing grants over /v1 (operators only; agents get 403 operator_required): list them and
revoke one. Grants are made by a person's or an operator's approve (`"grant"` in a decision),
never here. The web inbox lists and revokes too (gateway/http/web/grants.py)."""

from __future__ import annotations

from aiohttp import web

from gateway.core.errors import ValidationError
from gateway.http.scope import operator
from gateway.http.usecases import GRANTS

routes = web.RouteTableDef()


@routes.get("/v1/grants")
async def list_grants(request: web.Request) -> web.Response:
    """The live grants, newest first (`?all=true`: revoked and expired ones too)."""
    operator(request)
    grants = request.config_dict[GRANTS]
    raw = request.query.get("all", "false")
    if raw not in ("true", "false"):
        raise ValidationError("all", "must be true or false")
    items = await grants.list(live=raw == "false", limit=500)
    return web.json_response({"items": [grants.view(g) for g in items]})


@routes.delete("/v1/grants/{id}")
async def revoke_grant(request: web.Request) -> web.Response:
    """Revoke a grant (idempotent): the suspends it covered ask again."""
    caller = operator(request)
    grants = request.config_dict[GRANTS]
    grant = await grants.revoke(request.match_info["id"], caller.identity, operator=True)
    return web.json_response(grants.view(grant))
