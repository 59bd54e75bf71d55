"""The inbox's account page of sessions (/account/sessions): the signed-in person's own live web
sessions (when each began, when it ends, which one is this browser), a Sign out for each and a
Sign out all other sessions. A phone that is lost stays signed in until its session ends; a person
who still trusts their password ends it here rather than by changing the password.

Sessions live in the store, so ending one is seen at once by every replica: the cookie's next
request lands on the sign-in page, and its `/live` stream closes at its next heartbeat (it asks
for the session again each time). The page names a session by a keyed MAC of the store's hash of
its id: never the id, and nothing a cookie can be made from. A person ends only their own: another's
reference, or one already ended, is a 404 page that changes nothing.
"""

from __future__ import annotations

from aiohttp import web

from gateway.core.tokens import TokenSigner
from gateway.http.usecases import SIGNER, WEB_SESSIONS
from gateway.http.web.auth import PageError, posted_form, render, require
from gateway.http.web.sessions import SESSION_COOKIE, User, current_session_id
from gateway.service.websessions import key_of

routes = web.RouteTableDef()
PAGE = "/account/sessions"
_REF = "hitl.web.session-ref.v1"
_REF_LENGTH = 32


def _ref(signer: TokenSigner, key: str) -> str:
    """The page's name for the session the store names `key`: a MAC under the gateway's key, so
    that neither the page nor the store's table gives anything a cookie could carry."""
    return signer.mac(_REF, key, _REF_LENGTH)


@routes.get(PAGE)
@require()
async def sessions_page(request: web.Request, user: User) -> web.Response:
    """The signed-in person's live sessions, each with a Sign out button."""
    signer, sid = request.config_dict[SIGNER], current_session_id(request)
    this = key_of(sid) if sid else ""
    rows = [
        {"ref": _ref(signer, s.id), "created": s.created_at, "expires": s.expires_at, "this": s.id == this}
        for s in await request.config_dict[WEB_SESSIONS].of(user.name)
    ]
    return render(request, "sessions.html", {"sessions": rows, "others": sum(not r["this"] for r in rows)})


@routes.post(PAGE + "/{ref}/end")
@require()
async def end_one(request: web.Request, user: User) -> web.StreamResponse:
    """End one of the signed-in person's sessions (CSRF token required); this browser's own is a
    sign-out."""
    posted_form(request)
    signer, store, given = request.config_dict[SIGNER], request.config_dict[WEB_SESSIONS], request.match_info["ref"]
    key = next((s.id for s in await store.of(user.name) if signer.check_mac(_REF, s.id, given, _REF_LENGTH)), None)
    if key is None or not await store.end(user.name, key):
        raise PageError(404, "No such session among yours: it may have ended already. Nothing changed.")
    sid = current_session_id(request)
    if sid is not None and key == key_of(sid):
        resp = web.HTTPSeeOther("/login")
        resp.del_cookie(SESSION_COOKIE, path="/")
        raise resp
    raise web.HTTPSeeOther(PAGE)


@routes.post(PAGE + "/end-others")
@require()
async def end_others(request: web.Request, user: User) -> web.StreamResponse:
    """End every session of the signed-in person but this browser's (CSRF token required)."""
    posted_form(request)
    sid = current_session_id(request)
    assert sid is not None, "a signed-in request has a session"
    await request.config_dict[WEB_SESSIONS].end_others(user.name, sid)
    raise web.HTTPSeeOther(PAGE)
