"""The web inbox: server-rendered pages (Jinja2) to list, read and decide approvals.

A decision here is `service.decide(..., actor="web:<name>", channel="web")`: the same use case
as a chat button, so its SYNC outbox rows update every card of the approval on every channel.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp_jinja2
import jinja2
from aiohttp import web
from markupsafe import Markup

from gateway.core import extend as extend_rules
from gateway.core import rounds
from gateway.core.errors import GatewayError
from gateway.core.extend import parse_extension
from gateway.core.models import Approval, Outcome, Status
from gateway.http.keys import RUNTIME
from gateway.http.web import argsform, editlink, live
from gateway.http.web import auth as web_auth
from gateway.http.web import dashboard as web_dashboard
from gateway.http.web import sessions as web_sessions
from gateway.http.web.auth import PageError, checked_form, render, require
from gateway.http.web.sessions import User
from gateway.http.web.view import pretty, row
from gateway.runtime import Runtime
from gateway.telemetry.metrics import CONTENT_TYPE

routes = web.RouteTableDef()
_STATIC = Path(__file__).parent / "static"
LIVE = web.AppKey("live", live.LiveFeed)
_CONTENT_TYPES = {
    "/metrics": "text/plain",
    "/static/web.css": "text/css",
    "/static/live.js": "text/javascript",
    "/live": "text/event-stream",
}
_MAX_COMMENT = 2000


# ---------------------------------------------------------------- pages


def _status_filter(value: str) -> Status | None:
    if value in ("", "all"):
        return None
    try:
        return Status(value)
    except ValueError:
        raise PageError(400, f"status: must be 'all' or one of {', '.join(s.value for s in Status)}") from None


@routes.get("/")
@require()
async def inbox(request: web.Request, user: User) -> web.Response:
    """Web inbox: approvals oldest first, with SLA countdown, filtered by status, channel and run."""
    rt = request.app[RUNTIME]
    q = request.query
    filters = {
        "status": q.get("status", Status.WAITING.value),
        "channel": q.get("channel", ""),
        "run": q.get("run", ""),
    }
    items = await rt.store.list_approvals_by_age(
        status=_status_filter(filters["status"]),
        run_id=filters["run"].strip() or None,
        channel=filters["channel"].strip() or None,
        limit=200,
    )
    now = rt.clock.now()
    ctx = {"rows": [row(a, now) for a in items], "filters": filters, "statuses": [s.value for s in Status]}
    return render(request, "inbox.html", ctx)


@routes.get("/approvals/{id}")
@require()
async def approval_page(request: web.Request, user: User) -> web.Response:
    """One approval: args, summary, timeline, cards and deliveries, and the decision form."""
    rt = request.app[RUNTIME]
    approval = await rt.service.get(request.match_info["id"])
    return render(request, "approval.html", await _approval_ctx(rt, approval, user))


async def _approval_ctx(rt: Runtime, approval: Approval, user: User, **form: Any) -> dict[str, Any]:
    now = rt.clock.now()
    view = row(approval, now)
    submitted = form.get("submitted")
    edit_fields = argsform.render(argsform.fields(approval), submitted, form.get("error_field"))
    return {
        "edit_fields": Markup(edit_fields),  # escaped by argsform.render
        "change": rounds.change_text(approval) or "",
        "extend_choices": [extend_rules.label(d) for d in extend_rules.choices(approval)],
        "require_reason": approval.policy.require_reason,
        "args_error": (form.get("error_field") or "").startswith("args"),  # shown above the fields
        **view,
        "self_row": view,
        "args": pretty(approval.args),
        "events": [{"e": e, "data": pretty(e.data) if e.data else ""} for e in await rt.store.list_events(approval.id)],
        "cards": await rt.store.list_cards(approval.id),
        "deliveries": await rt.store.list_outbox(approval.id),
        "job": await rt.store.get_job(approval.id),
        "may_decide": user.can_decide and not approval.status.final,
        "form_error": form.get("error", ""),
        "comment": form.get("comment", ""),
    }


@routes.post("/approvals/{id}/decision")
@require("approver")
async def decide(request: web.Request, user: User) -> web.StreamResponse:
    """Approve, or reject with a comment, as web:<name> (approvers only; CSRF token required).
    A decision that cannot be taken re-renders the page with the error next to the form and
    what was typed kept."""
    rt = request.app[RUNTIME]
    form = await checked_form(request)
    comment = form.get("comment", "").strip()
    current = await rt.service.get(request.match_info["id"])
    try:
        outcome = _form_outcome(form.get("outcome", ""), comment)
        # The edit fields travel with an approve (unchanged ones are no edit: the same args hash).
        args = argsform.read(current, form) if outcome is Outcome.APPROVE else None
        approval = await rt.service.decide(
            current.id, outcome, user.actor, comment=comment or None, channel="web", args=args
        )
    except (PageError, GatewayError) as exc:
        status = exc.status
        if status >= 500:
            raise
        current = await rt.service.get(current.id)
        field = exc.details.get("field") if isinstance(exc, GatewayError) else None
        kept = {k: v for k, v in form.items() if k.startswith(argsform.PREFIX)}
        ctx = await _approval_ctx(
            rt, current, user, error=exc.message, comment=comment[:_MAX_COMMENT], submitted=kept, error_field=field
        )
        return render(request, "approval.html", ctx, status=status)
    raise web.HTTPSeeOther(f"/approvals/{approval.id}")


@routes.post("/approvals/{id}/extend")
@require("approver")
async def extend(request: web.Request, user: User) -> web.StreamResponse:
    """Extend the deadline by one of the policy's `extend` durations (approvers; CSRF token required)."""
    rt = request.app[RUNTIME]
    form = await checked_form(request)
    approval_id = request.match_info["id"]
    try:
        duration = parse_extension(form.get("duration", "").lstrip("+"))
        await rt.service.extend(approval_id, duration, user.actor, channel="web")
    except GatewayError as exc:
        if exc.status >= 500:
            raise
        ctx = await _approval_ctx(rt, await rt.service.get(approval_id), user, error=exc.message)
        return render(request, "approval.html", ctx, status=exc.status)
    raise web.HTTPSeeOther(f"/approvals/{approval_id}")


def _form_outcome(value: str, comment: str) -> Outcome:
    try:
        outcome = Outcome(value)
    except ValueError:
        raise PageError(400, "outcome: must be approve or reject") from None
    if len(comment) > _MAX_COMMENT:
        raise PageError(400, f"comment: at most {_MAX_COMMENT} characters")
    return outcome  # a reason to reject is the policy's call (`require_reason`), as on every path


@routes.get("/static/web.css")
async def stylesheet(request: web.Request) -> web.FileResponse:
    """The inbox stylesheet."""
    return web.FileResponse(_STATIC / "web.css", headers={"Cache-Control": "public, max-age=3600"})


@routes.get("/static/live.js")
async def live_script(request: web.Request) -> web.FileResponse:
    """The pages' only script: ticking SLA countdowns, and live regions refreshed on a change."""
    return web.FileResponse(_STATIC / "live.js", headers={"Cache-Control": "public, max-age=3600"})


@routes.get("/live")
@require()
async def live_stream(request: web.Request, user: User) -> web.StreamResponse:
    """Server-sent events: `change` whenever the gateway recorded something new."""
    return await live.stream(request, request.app[LIVE])


@routes.get("/metrics")
async def metrics(request: web.Request) -> web.Response:
    """Prometheus metrics (text format)."""
    rt = request.app[RUNTIME]
    body = await rt.metrics.render(rt.store)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


# ---------------------------------------------------------------- wiring


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


def setup_web(app: web.Application, rt: Runtime) -> dict[str, dict[str, Any]]:
    """Add the inbox, dashboard, login and /metrics routes; return their OpenAPI paths."""
    aiohttp_jinja2.setup(
        app,
        loader=jinja2.PackageLoader("gateway.http.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    app[web_auth.THROTTLE] = web_auth.LoginThrottle()
    app.middlewares.append(web_sessions.sessions)
    app[LIVE] = live.LiveFeed(rt.store)
    app.on_shutdown.append(app[LIVE].close)
    app.middlewares.append(security_headers)
    app.middlewares.append(web_auth.page_errors)
    app.on_startup.append(web_sessions.forget_removed_users)  # after the runtime started (cleanup_ctx)
    table = [*routes, *web_auth.routes, *web_dashboard.routes, *editlink.routes]
    app.add_routes(table)
    return openapi_paths(table)


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
