"""Web inbox auth: scrypt passwords, one-time signed login links, CSRF, the sign-in throttle.

Sessions (a signed cookie naming a session kept in the store) are in `sessions.py`. The role is
read from the current config on every request, so removing a user from `[web]` locks them out.
Who may open a page and the CSRF token of every POSTed form are checked by one middleware of the
web sub-application (`guard`), before the handler runs: a handler marked `require(...)` gets the
signed-in user, and `posted_form(request)` is the form whose token was checked.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import wraps
from typing import Any, NoReturn

import aiohttp_jinja2
from aiohttp import web

from gateway.core.errors import GatewayError, NotFound
from gateway.core.identity import shown
from gateway.core.tokens import TokenSigner
from gateway.http.peers import client_address, networks
from gateway.http.usecases import CLOCK, SETTINGS, SIGNER, WEB_SESSIONS
from gateway.http.web.sessions import COOKIES, CSRF_COOKIE, SESSION_COOKIE, User, current_user, end_session, set_cookie
from gateway.settings import Settings

LOGIN_LINK = "hitl.web.login.v1"
_SCRYPT_N, _SCRYPT_R, _SCRYPT_P = 2**14, 8, 1
_DUMMY_HASH = "scrypt$16384$8$1$" + "00" * 16 + "$" + "00" * 32
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_FORM: web.RequestKey[Mapping[str, str]] = web.RequestKey("web_form")

routes = web.RouteTableDef()


# ---------------------------------------------------------------- passwords (pure)


def hash_password(password: str, *, n: int = _SCRYPT_N) -> str:
    """scrypt from the standard library: memory-hard, no extra dependency."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=n, r=_SCRYPT_R, p=_SCRYPT_P, dklen=32)
    return f"scrypt${n}${_SCRYPT_R}${_SCRYPT_P}${salt.hex()}${digest.hex()}"


def verify_password(password: str, hashed: str) -> bool:
    try:
        _, n, r, p, salt, digest = hashed.split("$")
        expected = bytes.fromhex(digest)
        got = hashlib.scrypt(
            password.encode(), salt=bytes.fromhex(salt), n=int(n), r=int(r), p=int(p), dklen=len(expected)
        )
    except (ValueError, MemoryError):
        return False
    return hmac.compare_digest(got, expected)


# ---------------------------------------------------------------- sessions and links


def login_link(settings: Settings, signer: TokenSigner, name: str, now: Any) -> str:
    """A one-time sign-in URL for `name` (the link id is remembered when it is used)."""
    if settings.web.role(name, lambda g: settings.identities.in_group(g, f"web:{name.lower()}")) is None:
        raise NotFound(f"web user {name!r} is not in web.approvers or web.viewers")
    payload = {"u": name, "j": secrets.token_urlsafe(12)}
    token = signer.sign(LOGIN_LINK, payload, now + settings.web.login_link_max_age)
    return f"{settings.server.public_url.rstrip('/')}/login/link/{token}"


class PageError(Exception):
    """Rendered as the HTML error page by `page_errors` (the JSON error middleware is for /v1)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


# ---------------------------------------------------------------- CSRF


def csrf_for(request: web.Request, user: User | None) -> tuple[str, bool]:
    """The token to put in forms, and whether the pre-session cookie must be set."""
    if user is not None:
        return user.csrf, False
    given = request.cookies.get(CSRF_COOKIE, "")
    return (given, False) if len(given) >= 20 else (secrets.token_urlsafe(24), True)


def render(request: web.Request, template: str, context: Mapping[str, Any], *, status: int = 200) -> web.Response:
    """Render with the signed-in user and the CSRF token every form carries."""
    user = current_user(request)
    csrf, new = csrf_for(request, user)
    ctx = {"user": user, "csrf": csrf, **context}
    resp = aiohttp_jinja2.render_template(template, request, ctx, status=status)
    if new:
        set_cookie(resp, request.config_dict[SETTINGS], CSRF_COOKIE, csrf, timedelta(hours=2))
    resp.headers["Cache-Control"] = "no-store"
    return resp


async def _checked_form(request: web.Request) -> dict[str, str]:
    """The POSTed form, or 403 when its CSRF token is not the one `render` put in the page
    (400 when the body is not a form at all, e.g. multipart without a boundary)."""
    try:
        form = await request.post()
    except ValueError:
        raise PageError(400, "The form could not be read. Reload the page and try again.") from None
    given = form.get("csrf")
    user = current_user(request)
    expected = user.csrf if user is not None else request.cookies.get(CSRF_COOKIE, "")
    if not isinstance(given, str) or not expected or not hmac.compare_digest(given, expected):
        raise PageError(403, "Missing or invalid CSRF token. Reload the page and try again.")
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    for key, value in fields.items():  # PostgreSQL's text cannot hold one: a 500 deep in a use case
        if "\x00" in key or "\x00" in value:
            raise PageError(400, f"{shown(key)}: holds a NUL character. Nothing was recorded.")
    return fields


def posted_form(request: web.Request) -> Mapping[str, str]:
    """The form of this POST, its CSRF token checked by `guard`."""
    return request[_FORM]


async def revoke_then(request: web.Request, revoke: Callable[[str], Awaitable[object]], back: str) -> NoReturn:
    """A page's Revoke button (`POST .../{id}/revoke`, its CSRF token checked by `guard`): the
    use case decides whose it is (another's is a 403 page), then back to `back`."""
    posted_form(request)
    try:
        await revoke(request.match_info["id"])
    except GatewayError as exc:
        if exc.status >= 500:
            raise
        raise PageError(exc.status, exc.message) from None
    raise web.HTTPSeeOther(back)


@dataclass(frozen=True, slots=True)
class Access:
    """Who may open a page: signed-in users, and with `role` only those of that role."""

    role: str | None = None


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Before any handler of the web inbox: a page marked `require` needs a signed-in user
    (else a redirect to /login) of its role (else 403); then every POST to a route needs the
    CSRF token of the page it came from (else 403)."""
    access = getattr(request.match_info.handler, "web_access", None)
    if isinstance(access, Access):
        user = current_user(request)
        if user is None:
            raise web.HTTPSeeOther("/login")
        if access.role is not None and user.role != access.role:
            raise PageError(403, f"{user.name} is a {user.role} and cannot do this.")
    if request.method == "POST" and request.match_info.http_exception is None:
        request[_FORM] = await _checked_form(request)
    return await handler(request)


@web.middleware
async def page_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except PageError as exc:
        return render(request, "error.html", {"status": exc.status, "message": exc.message}, status=exc.status)


def require(
    role: str | None = None,
) -> Callable[[Callable[[web.Request, User], Awaitable[web.StreamResponse]]], Handler]:
    """Signed-in users only (else redirect to /login); `role="approver"` also refuses viewers.
    `guard` checks it before the handler runs; the handler gets the user."""

    def wrap(fn: Callable[[web.Request, User], Awaitable[web.StreamResponse]]) -> Handler:
        @wraps(fn)
        async def handler(request: web.Request) -> web.StreamResponse:
            user = current_user(request)
            assert user is not None, "guard lets no signed-out request through"
            try:
                return await fn(request, user)
            except GatewayError as exc:  # shown as a page, not as the /v1 JSON body
                raise PageError(exc.status, exc.message) from None

        handler.web_access = Access(role)  # type: ignore[attr-defined]
        return handler

    return wrap


class LoginThrottle:
    """At most `limit` failed password sign-ins per (address, name) in `window` (in memory,
    per process): slows down guessing without letting a stranger lock a user out everywhere.

    At most `max_keys` keys are kept, least recently failed first out: a flood of new keys
    evicts the oldest entries one by one, never the whole table (which would reset the count of
    the key being guessed)."""

    def __init__(self, limit: int = 5, window: timedelta = timedelta(minutes=15), max_keys: int = 10_000) -> None:
        self.limit, self.window, self.max_keys = limit, window, max_keys
        self._failures: OrderedDict[str, list[datetime]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._failures)

    def blocked(self, key: str, now: datetime) -> bool:
        recent = [t for t in self._failures.get(key, ()) if now - t < self.window]
        if recent:
            self._failures[key] = recent
        else:
            self._failures.pop(key, None)
        return len(recent) >= self.limit

    def failed(self, key: str, now: datetime) -> None:
        times = self._failures.pop(key, [])
        times.append(now)
        self._failures[key] = times[-self.limit :]  # the most recent; only `limit` of them matter
        while len(self._failures) > self.max_keys:
            self._failures.popitem(last=False)


THROTTLE = web.AppKey("web_login_throttle", LoginThrottle)


# ---------------------------------------------------------------- routes


@routes.get("/login")
async def login_page(request: web.Request) -> web.Response:
    """Sign-in form (name and password), and the single sign-on button with `[web.oidc]`."""
    if current_user(request) is not None:
        raise web.HTTPSeeOther("/")
    return render(request, "login.html", {"error": None})


@routes.post("/login")
async def login(request: web.Request) -> web.StreamResponse:
    """Sign in with a password; sets the session cookie."""
    settings, form = request.config_dict[SETTINGS], posted_form(request)
    name, password = form.get("name", "").strip(), form.get("password", "")
    proxies = networks(settings.server.trusted_proxies)  # checked at start, parsed once
    client = client_address(request.remote, request.headers.get("X-Forwarded-For"), proxies)
    throttle, key, now = request.config_dict[THROTTLE], f"{client}|{name}", request.config_dict[CLOCK].now()
    if throttle.blocked(key, now):
        msg = "Too many failed sign-ins for this name. Try again in a few minutes."
        return render(request, "login.html", {"error": msg}, status=429)
    hashed = settings.web.passwords.get(name)
    # Always hash once, so that a wrong name costs as long as a wrong password.
    ok = await asyncio.to_thread(verify_password, password, hashed or _DUMMY_HASH)
    if not (ok and hashed and await request.config_dict[COOKIES].role(name)):
        throttle.failed(key, now)
        return render(request, "login.html", {"error": "Wrong name or password."}, status=401)
    await end_session(request)  # the session this browser had, if any: no copy of it lives on
    await request.config_dict[COOKIES].start(name)


@routes.get("/login/link/{token}")
async def link_page(request: web.Request) -> web.Response:
    """Show a button rather than sign in on GET: chat link previews must not burn the link."""
    token = request.match_info["token"]
    try:
        data = request.config_dict[SIGNER].verify(LOGIN_LINK, token, request.config_dict[CLOCK].now())
    except GatewayError as exc:
        return render(request, "error.html", {"status": exc.status, "message": exc.message}, status=exc.status)
    return render(request, "link.html", {"name": data.get("u"), "token": token})


@routes.post("/login/link")
async def link_login(request: web.Request) -> web.StreamResponse:
    """Sign in with a one-time link (the link id is remembered, so it works once)."""
    form, now = posted_form(request), request.config_dict[CLOCK].now()
    try:
        data = request.config_dict[SIGNER].verify(LOGIN_LINK, form.get("token", ""), now)
    except GatewayError as exc:
        return render(request, "error.html", {"status": exc.status, "message": exc.message}, status=exc.status)
    name = data.get("u")
    if not isinstance(name, str) or await request.config_dict[COOKIES].role(name) is None:
        return render(request, "error.html", {"status": 403, "message": "Unknown user."}, status=403)
    if not await request.config_dict[WEB_SESSIONS].first_use(f"web-login:{data.get('j')}"):
        msg = "This sign-in link was already used. Ask for a new one."
        return render(request, "error.html", {"status": 410, "message": msg}, status=410)
    await end_session(request)
    await request.config_dict[COOKIES].start(name)


@routes.post("/logout")
async def logout(request: web.Request) -> web.StreamResponse:
    """Sign out: the session is revoked on the server and its cookie dropped."""
    await end_session(request)
    resp = web.HTTPSeeOther("/login")
    resp.del_cookie(SESSION_COOKIE, path="/")
    raise resp
