"""The inbox's standing grants: the live ones, each with a revoke button for the person who
granted it (operators revoke any over /v1/grants). A grant is made on the approval page, by
"Approve and allow for 1h" (gateway/http/web/inbox.py)."""

from __future__ import annotations

from aiohttp import web

from gateway.http.usecases import CLOCK, GRANTS
from gateway.http.web.auth import render, require, revoke_then
from gateway.http.web.sessions import User

routes = web.RouteTableDef()


@routes.get("/grants")
@require()
async def grants_page(request: web.Request, user: User) -> web.Response:
    """The live standing grants, newest first; the signed-in approver's own can be revoked."""
    grants = request.config_dict[GRANTS]
    items = await grants.list(limit=500)
    own = {g.id for g in await grants.list(granted_by=user.actor, limit=500)} if user.can_decide else set()
    now = request.config_dict[CLOCK].now()
    rows = [{"g": g, "mine": g.id in own, "left": g.expires_at - now} for g in items]
    return render(request, "grants.html", {"rows": rows})


@routes.post("/grants/{id}/revoke")
@require("approver")
async def revoke(request: web.Request, user: User) -> web.StreamResponse:
    """Revoke a grant the signed-in person made (CSRF token required); another's is a 403."""
    use = request.config_dict[GRANTS]
    await revoke_then(request, lambda found: use.revoke(found, user.actor, operator=False), "/grants")
