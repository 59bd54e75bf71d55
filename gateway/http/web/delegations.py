"""The inbox's delegations: a signed-in approver lets another person decide for them until a
time (out of office), sees the delegations they gave and received, and revokes one of them.
Operators manage anyone's over /v1/delegations (gateway/http/delegations.py)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from aiohttp import web

from gateway.core.errors import GatewayError, ValidationError
from gateway.core.identity import WEB
from gateway.http.usecases import CLOCK, DELEGATIONS
from gateway.http.web.auth import posted_form, render, require, revoke_then
from gateway.http.web.sessions import User
from gateway.service.delegations import Delegate

routes = web.RouteTableDef()


def _when(field: str, raw: str) -> datetime | None:
    """A form's date-time: what a `datetime-local` input sends (read as UTC), or one with an offset."""
    if not raw.strip():
        return None
    try:
        value = datetime.fromisoformat(raw.strip().upper().replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(field, f"{raw[:40]!r} is not a date and time like 2031-01-01T09:00") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


async def _page(
    request: web.Request,
    user: User,
    *,
    error: str | None = None,
    status: int = 200,
    form: Mapping[str, str] | None = None,
) -> web.Response:
    delegations = request.config_dict[DELEGATIONS]
    items = await delegations.list(of=user.actor)
    now = request.config_dict[CLOCK].now()
    party = delegations.identities.party
    me = party(user.actor)
    given = [{"d": d, "active": d.active(now)} for d in items if party(d.delegator) == me]
    received = [{"d": d, "active": d.active(now)} for d in items if party(d.delegate) == me]
    ctx = {"given": given, "received": received, "error": error, "form": form or {}}
    return render(request, "delegations.html", ctx, status=status)


@routes.get("/delegations")
@require("approver")
async def delegations_page(request: web.Request, user: User) -> web.Response:
    """The delegations the signed-in approver gave and received, and the form to give one."""
    return await _page(request, user)


@routes.post("/delegations")
@require("approver")
async def create(request: web.Request, user: User) -> web.StreamResponse:
    """Delegate one's own approvals (CSRF token required): a bare name is a web user."""
    form = posted_form(request)
    to = form.get("delegate", "").strip()
    try:
        until = _when("until", form.get("until", ""))
        if until is None:
            raise ValidationError("until", "is required: the date and time the delegation ends")
        cmd = Delegate(
            user.actor,
            to if ":" in to else f"{WEB}:{to}",
            until,
            user.actor,
            False,
            _when("from", form.get("from", "")),
            form.get("reason", "").strip()[:2000] or None,
        )
        await request.config_dict[DELEGATIONS].create(cmd)
    except GatewayError as exc:
        if exc.status >= 500:
            raise
        return await _page(request, user, error=exc.message, status=exc.status, form=form)
    raise web.HTTPSeeOther("/delegations")


@routes.post("/delegations/{id}/revoke")
@require("approver")
async def revoke(request: web.Request, user: User) -> web.StreamResponse:
    """Revoke a delegation the signed-in person gave or received (CSRF token required); another's is a 403."""
    use = request.config_dict[DELEGATIONS]
    await revoke_then(request, lambda found: use.revoke(found, user.actor, operator=False), "/delegations")
