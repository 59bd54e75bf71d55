"""The inbox's account page of devices: the signed-in person's Web Push subscriptions (the
browser each says it is, its push service, when it subscribed), and a Revoke for each (a lost
phone). Revoking forgets the subscription: no more pushes to it, and the links already pushed to
it stop working (gateway/http/web/push.py). A person sees and revokes only their own: another's
id, or one revoked already, is a 404 page that changes nothing.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from aiohttp import web

from gateway.http.usecases import PUSH
from gateway.http.web.auth import PageError, posted_form, render, require
from gateway.http.web.sessions import User

routes = web.RouteTableDef()
PAGE = "/account/devices"


def _service(endpoint: str) -> str:
    """The push service's host: never the endpoint's path, which is the subscription's secret."""
    try:
        return urlsplit(endpoint).hostname or ""
    except ValueError:
        return ""


@routes.get(PAGE)
@require()
async def devices_page(request: web.Request, user: User) -> web.Response:
    """The signed-in person's devices that get push notifications, each with a Revoke button."""
    subs = sorted(await request.config_dict[PUSH].of(user.name), key=lambda s: s.created_at, reverse=True)
    rows = [{"id": s.id, "label": s.label, "service": _service(s.endpoint), "at": s.created_at} for s in subs]
    return render(request, "devices.html", {"devices": rows})


@routes.post(PAGE + "/{id}/revoke")
@require()
async def revoke(request: web.Request, user: User) -> web.StreamResponse:
    """Revoke one of the signed-in person's push subscriptions (CSRF token required)."""
    posted_form(request)
    if not await request.config_dict[PUSH].revoke(user.name, request.match_info["id"]):
        raise PageError(404, "No such device among yours: it may have been revoked already. Nothing changed.")
    raise web.HTTPSeeOther(PAGE)
