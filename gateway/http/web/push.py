"""Web Push in the web inbox: the service worker, subscribing a browser, and the push's links.

- `/sw.js` is the service worker, served from the root so that its scope is the whole inbox
  (`Service-Worker-Allowed: /`), never cached stale (`no-cache`). It shows a push as a
  notification with Approve and Reject actions (`showNotification(title, {actions})`).
- An approver subscribes from the nav's button (`/static/push.js`): the browser's subscription
  is POSTed to `/push/subscribe` with the page's CSRF token, and kept for that user
  (gateway.service.push); `/push/unsubscribe` forgets it.
- An action opens `/push/links/<token>` (gateway.core.webpush): a GET shows what it would
  decide and a form; only the form's POST decides, once, as the person the push was sent to.
  A signed-in user who is someone else is refused: a link works only for its person, and only
  while the subscription it was pushed to is kept (unsubscribed or revoked: 410, nothing decided).
"""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from gateway.core import webpush as links
from gateway.core.errors import GatewayError, InvalidToken, TokenExpired
from gateway.core.identity import WEB
from gateway.core.models import Approval, Outcome
from gateway.http.usecases import CLOCK, INBOUND, PUSH, SIGNER
from gateway.http.web.auth import PageError, posted_form, render, require
from gateway.http.web.sessions import User, current_user
from gateway.service.presses import Press, PressResult, already_text

routes = web.RouteTableDef()
_STATIC = Path(__file__).parent / "static"
_MAX_REASON = 1000
_STATUS = {
    PressResult.DENIED: 403,
    PressResult.UNKNOWN: 404,
    PressResult.ALREADY_DECIDED: 409,
    PressResult.BUSY: 503,
    PressResult.STALE: 409,
    PressResult.INVALID: 400,
}


@routes.get("/sw.js")
async def service_worker(request: web.Request) -> web.FileResponse:
    """The service worker: shows a push as a notification with Approve and Reject actions."""
    headers = {
        "Content-Type": "text/javascript; charset=utf-8",
        "Service-Worker-Allowed": "/",
        "Cache-Control": "no-cache",
        "X-Content-Type-Options": "nosniff",
    }
    return web.FileResponse(_STATIC / "sw.js", headers=headers)


@routes.get("/static/push.js")
async def push_script(request: web.Request) -> web.FileResponse:
    """The nav's push button: subscribe this browser to pushes, or unsubscribe it."""
    return web.FileResponse(_STATIC / "push.js", headers={"Cache-Control": "public, max-age=3600"})


@routes.post("/push/subscribe")
@require("approver")
async def subscribe(request: web.Request, user: User) -> web.Response:
    """Keep this browser's push subscription (endpoint, p256dh, auth) for the signed-in approver."""
    form = posted_form(request)
    await request.config_dict[PUSH].subscribe(
        user.name,
        form.get("endpoint", ""),
        form.get("p256dh", ""),
        form.get("auth", ""),
        request.headers.get("User-Agent", ""),
    )
    return web.json_response({"subscribed": True}, status=201, headers={"Cache-Control": "no-store"})


@routes.post("/push/unsubscribe")
@require()
async def unsubscribe(request: web.Request, user: User) -> web.Response:
    """Forget this browser's push subscription (the signed-in user's own only)."""
    gone = await request.config_dict[PUSH].unsubscribe(user.name, posted_form(request).get("endpoint", ""))
    return web.json_response({"unsubscribed": gone}, headers={"Cache-Control": "no-store"})


async def _link(request: web.Request) -> links.PushLink:
    try:
        link = links.read(request.config_dict[SIGNER], request.match_info["token"], request.config_dict[CLOCK].now())
    except TokenExpired:
        raise PageError(410, "This link has expired. Decide in the inbox.") from None
    except InvalidToken:
        raise PageError(401, "This link is not valid: it may have been cut or changed on the way.") from None
    user = current_user(request)
    if user is not None and user.name != link.user:
        raise PageError(403, f"This link was sent to {link.user}; you are signed in as {user.name}.")
    # a lost phone's notifications must not decide once its subscription is revoked
    if not await request.config_dict[PUSH].keeps(link.user, link.subscription):
        raise PageError(
            410,
            "This link was pushed to a device that no longer gets notifications (unsubscribed or revoked)."
            " Decide in the inbox.",
        )
    return link


async def _approval(request: web.Request, link: links.PushLink) -> Approval:
    approval = await request.config_dict[INBOUND].approval(link.approval_id)
    if approval is None:
        raise PageError(404, "This approval no longer exists.")
    return approval


def _page(
    request: web.Request, approval: Approval, link: links.PushLink, *, error: str = "", status: int = 200
) -> web.Response:
    context = {
        "a": approval,
        "link": link,
        "verb": "Approve" if link.outcome is Outcome.APPROVE else "Reject",
        "token": request.match_info["token"],
        "error": error,
        "done": already_text(approval) if approval.status.final else "",
    }
    resp = render(request, "push_link.html", context, status=status)
    resp.headers["Referrer-Policy"] = "no-referrer"
    return resp


@routes.get("/push/links/{token}")
async def link_page(request: web.Request) -> web.Response:
    """What a push's Approve or Reject would decide, and a form to confirm it; decides nothing."""
    link = await _link(request)
    return _page(request, await _approval(request, link), link)


@routes.post("/push/links/{token}")
async def link_confirm(request: web.Request) -> web.Response:
    """Confirm a push's link: decide once, as the person it was sent to."""
    link = await _link(request)
    approval = await _approval(request, link)
    reason = posted_form(request).get("reason", "").strip()[:_MAX_REASON] if link.outcome is Outcome.REJECT else ""
    inbound, actor = request.config_dict[INBOUND], f"{WEB}:{link.user}"
    if not approval.status.final:
        try:  # a missing reason is said before the link is used up
            await inbound.check(approval, link.outcome, actor, args=None, comment=reason or None)
        except GatewayError as exc:
            return _page(request, approval, link, error=exc.message, status=exc.status)
    if not await inbound.first_time(links.use_key(link)):
        raise PageError(409, "This link was already used: each link works once.")
    verdict = await inbound.press(
        Press(link.approval_id, link.outcome, actor, WEB, comment=reason or None, seen=link.seen)
    )
    status = _STATUS.get(verdict.result, 200)
    return render(request, "done.html", {"message": verdict.text()}, status=status)
