"""Delegations over /v1 (operators only; agents get 403 operator_required): create one for
anyone, list them, read one with its audit trail, revoke one. A signed-in person delegates their
own approvals from the inbox (gateway/http/web/delegations.py)."""

from __future__ import annotations

from aiohttp import web

from gateway.core.errors import ValidationError
from gateway.http.schemas import read_json
from gateway.http.scope import operator
from gateway.http.usecases import DELEGATIONS
from gateway.service.delegations import Delegate

routes = web.RouteTableDef()


@routes.post("/v1/delegations")
async def create_delegation(request: web.Request) -> web.Response:
    """`delegate` decides for `delegator` from `from` (default: now) until `until`."""
    caller = operator(request)
    cmd = Delegate.by_operator(await read_json(request), caller.identity)
    delegations = request.config_dict[DELEGATIONS]
    return web.json_response(delegations.view(await delegations.create(cmd)), status=201)


@routes.get("/v1/delegations")
async def list_delegations(request: web.Request) -> web.Response:
    """Those not over yet, newest first (`?all=true`: revoked and ended ones too; `?of=ID`: only
    those where that identity's person delegates or is the delegate)."""
    operator(request)
    delegations = request.config_dict[DELEGATIONS]
    raw = request.query.get("all", "false")
    if raw not in ("true", "false"):
        raise ValidationError("all", "must be true or false")
    items = await delegations.views(live=raw == "false", of=request.query.get("of") or None)
    return web.json_response({"items": items})


@routes.get("/v1/delegations/{id}")
async def get_delegation(request: web.Request) -> web.Response:
    """One delegation, with its audit trail (`events`: created, used, revoked)."""
    operator(request)
    return web.json_response(await request.config_dict[DELEGATIONS].trail(request.match_info["id"]))


@routes.delete("/v1/delegations/{id}")
async def revoke_delegation(request: web.Request) -> web.Response:
    """Revoke a delegation (idempotent): from now on the delegate decides only for themselves."""
    caller = operator(request)
    delegations = request.config_dict[DELEGATIONS]
    revoked = await delegations.revoke(request.match_info["id"], caller.identity, operator=True)
    return web.json_response(delegations.view(revoked))
