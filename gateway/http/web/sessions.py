"""Web inbox sessions: a signed cookie naming a session the store keeps.

The cookie is a token signed by the gateway's signer (its own salt) holding the user name, a CSRF
secret, a random session id and an expiry checked against the injected clock. The store keeps a
hash of the session id (`gateway.service.websessions`), so that:
- logout revokes the session on the server: the old cookie is refused even if it was copied;
- a user removed from `[web]` is refused on the next request (the role is read from the config
  every time), and their sessions are deleted when the gateway starts without them, so that
  adding the name back later does not bring an old cookie back to life;
- a session carries a keyed mark of its user's password hash (`p`), so that setting a new
  password (one that leaked) ends every session the old one started.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import NoReturn
from urllib.parse import urlsplit

from aiohttp import web

from gateway.core import password_marks
from gateway.core.clock import Clock
from gateway.core.errors import GatewayError
from gateway.core.tokens import TokenSigner
from gateway.service.websessions import WebSessions
from gateway.settings import Settings

SESSION = "hitl.web.session.v2"  # v1 cookies had no server-side session: they are refused
SESSION_COOKIE = "hitl_session"
CSRF_COOKIE = "hitl_csrf"
_USER = web.RequestKey("web_user", object)
_SID = web.RequestKey("web_session", str)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class User:
    name: str
    role: str
    csrf: str

    @property
    def actor(self) -> str:
        """The canonical identity: web names are case-insensitive (`Alice` in the config signs in
        as `web:alice`), as every use case compares them."""
        return f"web:{self.name.lower()}"

    @property
    def can_decide(self) -> bool:
        return self.role == "approver"


class SessionCookies:
    """Signs, reads and revokes session cookies over the sessions use case."""

    def __init__(self, sessions: WebSessions, signer: TokenSigner, settings: Settings, clock: Clock) -> None:
        self.sessions, self.signer, self.settings, self.clock = sessions, signer, settings, clock

    async def resolve(self, token: str) -> tuple[User, str] | None:
        """The user and session id of a cookie: signature, expiry, the store's session row (not
        revoked) and the user's current role."""
        try:
            data = self.signer.verify(SESSION, token, self.clock.now())
        except GatewayError:
            return None
        name, csrf, sid = data.get("u"), data.get("c"), data.get("s")
        role = await self.role(name) if isinstance(name, str) else None
        if not (role and isinstance(name, str) and isinstance(csrf, str) and isinstance(sid, str)):
            return None
        if not self._same_password(name, data.get("p", "")):
            return None
        if await self.sessions.user_of(sid) != name:
            return None
        return User(name, role, csrf), sid

    async def role(self, name: str) -> str | None:
        """The user's role under the current config: listed by name, or (when `[web]` lists a
        `group:NAME`) through the group's configured members and the groups their last sign-in
        through the provider claimed."""
        web_settings, identities = self.settings.web, self.settings.identities
        if not web_settings.by_group:
            return web_settings.role(name)
        actor = f"web:{name.lower()}"  # web names are case-insensitive identities
        max_age = web_settings.session_max_age
        claimed = await self.sessions.claimed_groups(actor, max_age) if identities.claimable else frozenset()
        return web_settings.role(name, lambda g: identities.in_group(g, actor, claimed))

    async def start(self, name: str) -> NoReturn:
        """Record a new session and redirect to the inbox with its signed cookie."""
        now, max_age = self.clock.now(), self.settings.web.session_max_age
        sid = secrets.token_urlsafe(24)
        await self.sessions.open(sid, name, max_age)
        payload = {"u": name, "c": secrets.token_urlsafe(24), "s": sid, "p": self._password_mark(name)}
        token = self.signer.sign(SESSION, payload, now + max_age)
        resp = web.HTTPSeeOther("/")
        set_cookie(resp, self.settings, SESSION_COOKIE, token, max_age)
        resp.del_cookie(CSRF_COOKIE, path="/")
        raise resp

    def _password_mark(self, name: str) -> str:
        """A keyed mark of `name`'s password hash ('' without one): gateway.core.password_marks."""
        return password_marks.mark(self.signer, self.settings.web.passwords.get(name))

    def _same_password(self, name: str, mark: object) -> bool:
        """Whether a session's mark is of `name`'s password now."""
        return password_marks.same(self.signer, self.settings.web.passwords.get(name), mark)

    async def forget_removed_users(self, app: web.Application) -> None:
        """At start: delete the sessions of users no longer in `[web]`. Not when a role comes
        through a group: who is a user is then not a list (each request still checks the role)."""
        if not self.settings.web.by_group:
            await self.sessions.keep_only({*self.settings.web.approvers, *self.settings.web.viewers})


COOKIES = web.AppKey("web_session_cookies", SessionCookies)


def current_user(request: web.Request) -> User | None:
    """The signed-in user of this request (resolved once by the `sessions` middleware)."""
    user = request.get(_USER)
    return user if isinstance(user, User) else None


def current_session_id(request: web.Request) -> str | None:
    """The session id of this request's cookie (never shown: it is the session's credential)."""
    return request.get(_SID)


@web.middleware
async def sessions(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Resolve the session cookie once per request (the web sub-application's pages only)."""
    token = request.cookies.get(SESSION_COOKIE)
    if token and (found := await request.config_dict[COOKIES].resolve(token)) is not None:
        request[_USER], request[_SID] = found
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


async def end_session(request: web.Request) -> None:
    """Revoke this request's session in the store (logout)."""
    sid = request.get(_SID)
    if sid is not None:
        await request.config_dict[COOKIES].sessions.revoke(sid)


__all__ = [
    "COOKIES",
    "CSRF_COOKIE",
    "SESSION",
    "SESSION_COOKIE",
    "SessionCookies",
    "User",
    "current_session_id",
    "current_user",
    "end_session",
    "sessions",
    "set_cookie",
]
