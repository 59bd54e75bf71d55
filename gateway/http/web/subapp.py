"""The web inbox as an aiohttp sub-application with its own middleware.

The inbox, sign-in, dashboard, edit links and /metrics are one sub-application (`web_app`):
sessions, security headers, HTML error pages, and `guard` (who may open a page, the CSRF token of
every form) run for its routes only. `mount` serves it at the root, beside the /v1 API and the
channels' webhooks, which never run that middleware. Its handlers read the use cases from the
parent's keys (gateway.http.usecases) through `request.config_dict`.
"""

from __future__ import annotations

from typing import Any

import aiohttp_jinja2
import jinja2
from aiohttp import web
from aiohttp.web_urldispatcher import AbstractRuleMatching, MatchedSubAppResource

from gateway.http.web import auth as web_auth
from gateway.http.web import dashboard as web_dashboard
from gateway.http.web import delegations as web_delegations
from gateway.http.web import devices as web_devices
from gateway.http.web import editlink, inbox, live
from gateway.http.web import grants as web_grants
from gateway.http.web import oidc as web_oidc
from gateway.http.web import push as web_push
from gateway.http.web import runs as web_runs
from gateway.http.web import sessions as web_sessions
from gateway.http.web import signins as web_signins
from gateway.http.web.inbox import LIVE
from gateway.http.web.sessions import SessionCookies
from gateway.service.queries import Reads

WEB_APP = web.AppKey("web_app", web.Application)  # the sub-application, on its parent
_API_PREFIXES = ("/v1/", "/webhooks/", "/healthz", "/readyz", "/openapi.json")
_CONTENT_TYPES = {
    "/metrics": "text/plain",
    "/static/web.css": "text/css",
    "/static/live.js": "text/javascript",
    "/static/push.js": "text/javascript",
    "/sw.js": "text/javascript",
    "/push/subscribe": "application/json",
    "/push/unsubscribe": "application/json",
    "/static/keys.js": "text/javascript",
    "/live": "text/event-stream",
}


@web.middleware
async def security_headers(request: web.Request, handler: web_auth.Handler) -> web.StreamResponse:
    resp = await handler(request)
    if resp.content_type == "text/html":
        resp.headers.setdefault(
            "Content-Security-Policy",
            "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self';"
            " form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        )
        resp.headers.setdefault("X-Frame-Options", "DENY")
        resp.headers.setdefault("Referrer-Policy", "no-referrer")
    return resp


ROUTES: list[web.AbstractRouteDef] = [
    *inbox.routes,
    *web_auth.routes,
    *web_dashboard.routes,
    *editlink.routes,
    *web_grants.routes,
    *web_delegations.routes,
    *web_push.routes,
    *web_devices.routes,
    *web_signins.routes,
    *web_runs.routes,
    *web_oidc.routes,
]


def web_app(cookies: SessionCookies, reads: Reads) -> web.Application:
    """The web inbox, dashboard, sign-in, edit links and /metrics as a sub-application with its
    own middleware; it reads the use cases from its parent's keys (gateway.http.usecases)."""
    app = web.Application(
        middlewares=[web_sessions.sessions, security_headers, web_auth.page_errors, web_auth.guard],
    )
    env = aiohttp_jinja2.setup(
        app,
        loader=jinja2.PackageLoader("gateway.http.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    push = cookies.settings.webpush
    env.globals["webpush_key"] = push.public_key if push.enabled else ""  # the nav's push button
    oidc = cookies.settings.web.oidc
    env.globals["sso"] = oidc is not None  # the sign-in page's "Sign in with SSO"
    if oidc is not None:
        app[web_oidc.OIDC] = web_oidc.OidcClient(oidc, cookies.settings.server.public_url)
    app[web_auth.THROTTLE] = web_auth.LoginThrottle()
    app[web_sessions.COOKIES] = cookies
    app[LIVE] = live.LiveFeed(reads.newest_event_id, per_user=cookies.settings.web.live_streams_per_user)
    app.on_shutdown.append(app[LIVE].close)
    app.on_startup.append(cookies.forget_removed_users)  # after the runtime started (the parent's cleanup_ctx)
    app.add_routes(ROUTES)
    return app


class _OwnRoutes(AbstractRuleMatching):
    """Matches the requests the sub-application has a route for (any method: a wrong one is its
    405); the others fall through to the parent's routes (the API, the channels' webhooks)."""

    def __init__(self, app: web.Application) -> None:
        self._app = app

    async def match(self, request: web.Request) -> bool:
        if request.path.startswith(_API_PREFIXES):  # the common case, without a second resolve
            return False
        found = await self._app.router.resolve(request)
        return not isinstance(found.http_exception, web.HTTPNotFound)

    def get_info(self) -> Any:  # aiohttp's introspection dict; its type is private
        return {"routes": "the web inbox's own"}

    @property
    def canonical(self) -> str:
        return "/"


def mount(parent: web.Application, app: web.Application) -> None:
    """Serve the sub-application at the root. aiohttp's `add_subapp` refuses an empty prefix, so
    it is mounted as `add_domain` mounts one, on a rule (its own routes), with public calls only:
    its signals run with the parent's (startup after the parent's cleanup_ctx, which starts the
    runtime), and it is frozen now, as `add_domain` would."""
    parent.router.register_resource(MatchedSubAppResource(_OwnRoutes(app), app))
    parent.on_startup.append(lambda _: app.startup())
    parent.on_shutdown.append(lambda _: app.shutdown())
    parent.on_cleanup.append(lambda _: app.cleanup())
    app.pre_freeze()


def openapi_paths(table: list[web.AbstractRouteDef]) -> dict[str, dict[str, Any]]:
    paths: dict[str, dict[str, Any]] = {}
    for route in table:
        if not isinstance(route, web.RouteDef):
            continue
        doc = (route.handler.__doc__ or "").strip().splitlines()
        summary = doc[0] if doc else route.path
        kind = _CONTENT_TYPES.get(route.path, "text/html")
        html = kind == "text/html"
        op: dict[str, Any] = {
            "summary": summary,
            "security": [],
            "responses": {"200": {"description": "OK", "content": {kind: {}}}},
        }
        if html:
            op["description"] = "Web inbox (session cookie; redirects to /login when signed out)"
            op["responses"]["303"] = {"description": "Redirect"}
            op["responses"]["403"] = {"description": "Forbidden (CSRF token or role)"}
        if "{" in route.path:
            name = route.path.split("{", 1)[1].split("}", 1)[0]
            op["parameters"] = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}]
        paths.setdefault(route.path, {})[route.method.lower()] = op
    return paths
