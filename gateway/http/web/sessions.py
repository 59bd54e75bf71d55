"""Web inbox sessions: a signed cookie naming a session the store keeps.

The cookie is a token signed by `runtime.signer` (its own salt) holding the user name, a CSRF
secret, a random session id and an expiry checked against the injected clock. The store keeps a
hash of the session id (table `web_sessions`), so that:
- logout revokes the session on the server: the old cookie is refused even if it was copied;
- a user removed from `[web]` is refused on the next request (the role is read from the config
  every time), and their sessions are deleted when the gateway starts without them, so that
  adding the name back later does not bring an old cookie back to life.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import NoReturn
from urllib.parse import urlsplit

from aiohttp import web

from gateway.core.errors import GatewayError
from gateway.http.keys import RUNTIME
from gateway.runtime import Runtime
from gateway.settings import Settings

SESSION = "hitl.web.session.v2"  # v1 cookies had no server-side session: they are refused
SESSION_COOKIE = "hitl_session"
CSRF_COOKIE = "hitl_csrf"
_USER = web.RequestKey("web_user", object)
_SID = web.RequestKey("web_session", str)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_API_PREFIXES = ("/v1/", "/webhooks/", "/healthz", "/readyz", "/openapi.json")


@dataclass(frozen=True, slots=True)
class User:
    name: str
    role: str
    csrf: str

    @property
    def actor(self) -> str:
        return f"web:{self.name}"

    @property
    def can_decide(self) -> bool:
        return self.role == "approver"


def _key(session_id: str) -> str:
    """What the store keeps: a hash, so that reading the table gives no usable cookie."""
    return hashlib.sha256(session_id.encode()).hexdigest()


def current_user(request: web.Request) -> User | None:
    """The signed-in user of this request (resolved once by the `sessions` middleware)."""
    user = request.get(_USER)
    return user if isinstance(user, User) else None


@web.middleware
async def sessions(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Resolve the session cookie once per request: signature, expiry, the store's session
    row (not revoked) and the user's current role."""
    token = request.cookies.get(SESSION_COOKIE)
    if token and not request.path.startswith(_API_PREFIXES):
        rt = request.app[RUNTIME]
        try:
            data = rt.signer.verify(SESSION, token, rt.clock.now())
        except GatewayError:
            data = {}
        name, csrf, sid = data.get("u"), data.get("c"), data.get("s")
        role = rt.settings.web.role(name) if isinstance(name, str) else None
        fields_ok = role and isinstance(name, str) and isinstance(csrf, str) and isinstance(sid, str)
        if fields_ok and await rt.store.session_user(_key(str(sid)), rt.clock.now()) == name:
            request[_USER] = User(str(name), str(role), str(csrf))
            request[_SID] = str(sid)
    return await handler(request)


def _secure(settings: Settings) -> bool:
    return urlsplit(settings.server.public_url).scheme == "https"


def set_cookie(resp: web.StreamResponse, settings: Settings, name: str, value: str, max_age: timedelta) -> None:
    resp.set_cookie(
        name,
        value,
        max_age=int(max_age.total_seconds()),
        path="/",
        httponly=True,
        samesite="Strict",
        secure=_secure(settings),
    )


async def start_session(rt: Runtime, name: str) -> NoReturn:
    """Record a new session and redirect to the inbox with its signed cookie."""
    now, max_age = rt.clock.now(), rt.settings.web.session_max_age
    sid = secrets.token_urlsafe(24)
    await rt.store.create_session(_key(sid), name, now, now + max_age)
    token = rt.signer.sign(SESSION, {"u": name, "c": secrets.token_urlsafe(24), "s": sid}, now + max_age)
    resp = web.HTTPSeeOther("/")
    set_cookie(resp, rt.settings, SESSION_COOKIE, token, max_age)
    resp.del_cookie(CSRF_COOKIE, path="/")
    raise resp


async def end_session(request: web.Request) -> None:
    """Revoke this request's session in the store (logout)."""
    sid = request.get(_SID)
    if sid is not None:
        await request.app[RUNTIME].store.delete_session(_key(sid))


async def forget_removed_users(app: web.Application) -> None:
    """At start: delete the sessions of users no longer in `[web]`."""
    rt = app[RUNTIME]
    await rt.store.delete_sessions({*rt.settings.web.approvers, *rt.settings.web.viewers})


__all__ = [
    "CSRF_COOKIE",
    "SESSION",
    "SESSION_COOKIE",
    "User",
    "current_user",
    "end_session",
    "forget_removed_users",
    "sessions",
    "set_cookie",
    "start_session",
]
