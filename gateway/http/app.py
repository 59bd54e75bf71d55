"""create_app(settings): the aiohttp application, its routes and its lifecycle."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from gateway.core.clock import Clock
from gateway.http import api, audit, batch, delegations, grants, jobs, openapi, rules, runs
from gateway.http import usecases as uses
from gateway.http.front import front
from gateway.http.keys import RUNTIME
from gateway.http.middleware import MAX_BODY
from gateway.http.web import subapp
from gateway.http.web.sessions import SessionCookies
from gateway.runtime import Runtime
from gateway.settings import Settings

log = logging.getLogger("gateway.http")
OPENAPI = web.AppKey("openapi", dict)


def create_app(
    settings: Settings,
    *,
    runtime: Runtime | None = None,
    clock: Clock | None = None,
    background: bool = True,
    exclusive: bool = False,
) -> web.Application:
    """`exclusive`: this is `serve`, the one serving process of a SQLite file (Store.take_over)."""
    rt = runtime or Runtime(settings, clock=clock)
    app = web.Application(
        client_max_size=settings.server.max_body_bytes,
        # one middleware for the deadlines, the request id, auth and the JSON errors (front.py)
        middlewares=[front(settings.server.body_timeout.total_seconds(), settings.security.principals())],
    )
    # Handlers get the use cases, never the runtime. RUNTIME stays for the tests and the handlers
    # not converted yet (http/runs.py, http/jobs.py): no handler should read it.
    app[RUNTIME] = rt
    provide(app, rt)
    app[MAX_BODY] = settings.server.max_body_bytes
    app.add_routes(api.routes)
    app.add_routes(batch.routes)
    app.add_routes(jobs.routes)
    app.add_routes(runs.routes)
    app.add_routes(audit.routes)
    app.add_routes(grants.routes)
    app.add_routes(delegations.routes)
    app.add_routes(rules.routes)
    extra: dict[str, dict[str, Any]] = dict(audit.OPENAPI)
    for channel in rt.channels.values():
        app.add_routes(channel.routes())
        for route in channel.routes():
            if isinstance(route, web.RouteDef):
                extra.setdefault(route.path, {})[route.method.lower()] = {
                    "summary": f"{channel.kind} webhook (authenticated by the platform's signature)",
                    "security": [],
                    "responses": {"200": {"description": "OK"}, "401": {"description": "Bad signature"}},
                }
    cookies = SessionCookies(rt.web_sessions, rt.signer, settings, rt.clock)
    app[subapp.WEB_APP] = web_app = subapp.web_app(cookies, rt.reads)
    subapp.mount(app, web_app)
    extra.update(subapp.openapi_paths(subapp.ROUTES))
    app[OPENAPI] = openapi.spec(extra)

    async def openapi_json(request: web.Request) -> web.Response:
        return web.json_response(request.app[OPENAPI])

    app.router.add_get("/openapi.json", openapi_json)

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        await rt.start(background=background, exclusive=exclusive)
        log.info(
            "gateway ready: store=%s channels=%s",
            settings.store.url.split("://")[0],
            ",".join(sorted(rt.channels)),
        )
        yield
        await rt.stop()

    async def stop_claiming(app: web.Application) -> None:
        rt.begin_stop()  # while in-flight requests drain: running jobs share the same deadline

    app.cleanup_ctx.append(lifecycle)
    app.on_shutdown.append(stop_claiming)
    return app


def provide(app: web.Application, rt: Runtime) -> None:
    """The use cases handlers read (gateway.http.usecases), from the runtime that built them."""
    app[uses.SETTINGS] = rt.settings
    app[uses.CLOCK] = rt.clock
    app[uses.SIGNER] = rt.signer
    app[uses.SERVICE] = rt.service
    app[uses.INBOUND] = rt.inbound
    app[uses.AUDIT] = rt.audit
    app[uses.READS] = rt.reads
    app[uses.WEB_SESSIONS] = rt.web_sessions
    app[uses.PUSH] = rt.push
    app[uses.WEBHOOKS] = rt.webhooks
    app[uses.METRICS] = rt.metrics
    app[uses.DELIVERIES] = rt.deliveries
    app[uses.JOBS] = rt.jobs
    app[uses.JOURNAL] = rt.journal
    app[uses.GRANTS] = rt.service.grants
    app[uses.DELEGATIONS] = rt.service.delegations
    app[uses.RULE_OPS] = rt.rule_ops
    app[uses.READY] = rt.ready
