"""Sign in to the web inbox through an OpenID provider (`[web.oidc]`, docs/identity.md).

The authorization code flow with PKCE (S256), through authlib (the code verifier and its
challenge) and joserfc (authlib's JOSE library: the ID token). The state, the nonce and the code
verifier travel in a signed cookie that lives ten minutes, and the state is used once (the
store's one-time marks, as the sign-in links). The ID token's signature is checked against the
keys of the provider's `jwks_uri` (from its discovery document), then its `iss`, `aud`, `exp`,
`iat` and `nonce`, against the injected clock. Only asymmetric algorithms are accepted: a token
signed with the client secret (HS256) or unsigned is refused.

The identity is `web:<email>` when `email_verified` is true (else `web:<sub>`, see
gateway/settings/oidc.py); its claimed groups replace the ones its last sign-in left.
"""

from __future__ import annotations

import base64
import hmac
import importlib.util
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NoReturn
from urllib.parse import quote, urlencode, urlsplit

import aiohttp
from aiohttp import web

from gateway.core.errors import ConfigError, GatewayError
from gateway.core.identity import NAMES, WEB
from gateway.http.usecases import CLOCK, SETTINGS, SIGNER, WEB_SESSIONS
from gateway.http.web.auth import PageError
from gateway.http.web.sessions import COOKIES, end_session
from gateway.settings import Settings
from gateway.settings.oidc import OidcSettings

log = logging.getLogger("gateway.web")
PENDING = "hitl.web.oidc.v1"
PENDING_COOKIE = "hitl_oidc"
PENDING_MAX_AGE = timedelta(minutes=10)
CALLBACK = "/login/oidc/callback"
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
LEEWAY = 60  # seconds of clock skew allowed on exp and iat
_TIMEOUT = aiohttp.ClientTimeout(total=10)

routes = web.RouteTableDef()


class SignInRefused(GatewayError):
    """The provider's answer is not a sign-in we accept."""

    code = "oidc_refused"
    status = 401


@dataclass(frozen=True, slots=True)
class Provider:
    """What the discovery document says (its `issuer` must be the configured one)."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str


def check_id_token(
    token: str, keys: Mapping[str, Any], *, issuer: str, client_id: str, nonce: str, now: datetime
) -> dict[str, Any]:
    """The ID token's claims, or SignInRefused naming what failed: its signature against
    `keys` (a JWK Set), then `iss`, `aud` (and `azp` with several audiences), `exp`, `iat`
    and `nonce`. Pure: `now` is the caller's clock."""
    from joserfc import jwt
    from joserfc.errors import JoseError
    from joserfc.jwk import KeySet

    try:
        key_set = KeySet.import_key_set(dict(keys))  # type: ignore[arg-type]
        decoded = jwt.decode(token, key_set, algorithms=list(ALGORITHMS))
    except (JoseError, ValueError, TypeError) as exc:
        raise SignInRefused(f"the ID token's signature does not verify ({type(exc).__name__})") from None
    claims = dict(decoded.claims)
    registry = jwt.JWTClaimsRegistry(
        now=int(now.timestamp()),
        leeway=LEEWAY,
        iss={"essential": True, "value": issuer},
        aud={"essential": True, "value": client_id},
        exp={"essential": True},
        iat={"essential": True},
        sub={"essential": True},
        nonce={"essential": True, "value": nonce},
    )
    try:
        registry.validate(claims)
    except JoseError as exc:
        raise SignInRefused(f"the ID token is refused: {exc.description or exc.error}") from None
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    if len(audiences) > 1 and claims.get("azp") != client_id:
        raise SignInRefused("the ID token is refused: it names other audiences and was not issued to us (azp)")
    return claims


def identity_name(claims: Mapping[str, Any], identity_claim: str) -> str:
    """The web user name: the e-mail when the provider verified it (and `identity_claim` is
    `email`), else `sub`; SignInRefused if it is not a web name (1-64 of A-Z a-z 0-9 _ . @ -).
    Where an address is the identity, a `sub` taken for want of a verified one must not read as
    an address: some providers make `sub` the address the user typed, unverified."""
    email = claims.get("email")
    verified = claims.get("email_verified") is True
    by_email = identity_claim == "email"
    took_email = by_email and verified and isinstance(email, str)
    raw = email if took_email else claims.get("sub")
    if by_email and not took_email and isinstance(raw, str) and "@" in raw:
        raise SignInRefused("the provider has not verified your e-mail address, and your sub reads as one")
    name = NAMES.canonical(raw) if isinstance(raw, str) else None
    if name is None:
        raise SignInRefused("the provider's identity for you is not a usable web name (1-64 of A-Z a-z 0-9 _ . @ -)")
    return name


class OidcClient:
    """The provider's endpoints and keys (read once, the keys again when a token names a key
    they lack: the provider rotated them), and the two calls of the flow."""

    def __init__(self, settings: OidcSettings, public_url: str) -> None:
        missing = [name for name in ("authlib", "joserfc") if importlib.util.find_spec(name) is None]
        if missing:  # at start, not at the first sign-in
            hint = f"single sign-on needs the extra `oidc` ({', '.join(missing)}): pip install ./sdk '.[oidc]'"
            raise ConfigError("web.oidc", hint)
        self.settings = settings
        self.redirect_uri = public_url.rstrip("/") + CALLBACK
        if not settings.group_map:  # then a group someone names at the provider is ours of that name
            log.warning(
                "web.oidc has no group_map: each value of the %r claim is taken as the group of that name; "
                "where users can create or rename groups at the provider, map its group ids instead",
                settings.groups_claim,
            )
        self._provider: Provider | None = None
        self._keys: dict[str, Any] | None = None

    async def _get(self, url: str) -> dict[str, Any]:
        async with aiohttp.ClientSession(timeout=_TIMEOUT) as http, http.get(url) as resp:
            if resp.status != 200:
                raise SignInRefused(f"the provider answered {resp.status} for {url}")
            try:
                body = await resp.json(content_type=None)
            except ValueError:  # not JSON: the same refusal as any other wrong answer
                body = None
        if not isinstance(body, dict):
            raise SignInRefused(f"the provider's {url} is not a JSON object")
        return body

    async def provider(self) -> Provider:
        if self._provider is None:
            base = self.settings.issuer.rstrip("/")
            meta = await self._get(f"{base}/.well-known/openid-configuration")
            if meta.get("issuer") != self.settings.issuer:
                raise SignInRefused(
                    f"the discovery document names issuer {meta.get('issuer')!r}, not the configured one"
                )
            try:
                self._provider = Provider(
                    meta["issuer"], meta["authorization_endpoint"], meta["token_endpoint"], meta["jwks_uri"]
                )
            except KeyError as exc:
                raise SignInRefused(f"the discovery document has no {exc.args[0]}") from None
        return self._provider

    async def keys(self, *, refresh: bool = False) -> dict[str, Any]:
        if self._keys is None or refresh:
            self._keys = await self._get((await self.provider()).jwks_uri)
        return self._keys

    async def authorize_url(self, state: str, nonce: str, verifier: str) -> str:
        from authlib.oauth2.rfc7636 import create_s256_code_challenge

        query = {
            "response_type": "code",
            "client_id": self.settings.client_id,
            "redirect_uri": self.redirect_uri,
            "scope": " ".join(self.settings.scopes),
            "state": state,
            "nonce": nonce,
            "code_challenge": create_s256_code_challenge(verifier),
            "code_challenge_method": "S256",
        }
        endpoint = (await self.provider()).authorization_endpoint
        return f"{endpoint}{'&' if urlsplit(endpoint).query else '?'}{urlencode(query)}"

    async def id_token(self, code: str, verifier: str) -> str:
        """Exchange the code (client_secret_basic, with the PKCE verifier) for the ID token."""
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": self.redirect_uri}
        # client_secret_basic: each part form-encoded first (RFC 6749 2.3.1)
        pair = f"{quote(self.settings.client_id, safe='')}:{quote(self.settings.client_secret, safe='')}"
        headers = {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}
        endpoint = (await self.provider()).token_endpoint
        async with (
            aiohttp.ClientSession(timeout=_TIMEOUT) as http,
            http.post(endpoint, data={**form, "code_verifier": verifier}, headers=headers) as resp,
        ):
            try:
                body = await resp.json(content_type=None)
            except ValueError:  # not JSON: said below, never a 500
                body = None
        token = body.get("id_token") if isinstance(body, dict) else None
        if resp.status != 200 or not isinstance(token, str):
            # only the OAuth error fields: the rest of an answer may hold an access token
            said = {k: str(body[k])[:100] for k in ("error", "error_description") if k in body} if body else {}
            raise SignInRefused(f"the provider refused the code ({resp.status}: {said or 'no ID token'})")
        return token

    async def claims(self, code: str, verifier: str, nonce: str, now: datetime) -> dict[str, Any]:
        token = await self.id_token(code, verifier)
        issuer, client_id = self.settings.issuer, self.settings.client_id
        try:
            return check_id_token(token, await self.keys(), issuer=issuer, client_id=client_id, nonce=nonce, now=now)
        except SignInRefused as exc:
            if "signature" not in exc.message:
                raise
            keys = await self.keys(refresh=True)  # the provider may have rotated its keys
            return check_id_token(token, keys, issuer=issuer, client_id=client_id, nonce=nonce, now=now)


OIDC = web.AppKey("web_oidc", OidcClient)


def _client(request: web.Request) -> OidcClient:
    client = request.config_dict.get(OIDC)
    if client is None:
        raise web.HTTPNotFound(text="single sign-on is not configured ([web.oidc])")
    return client


@routes.get("/login/oidc")
async def begin(request: web.Request) -> web.StreamResponse:
    """Send the browser to the provider, with a fresh state, nonce and PKCE verifier kept in a
    signed cookie (SameSite=Lax: it must come back on the provider's redirect)."""
    client, settings = _client(request), request.config_dict[SETTINGS]  # 404 first: the extra may be absent
    from authlib.common.security import generate_token

    state, nonce, verifier = generate_token(32), generate_token(32), generate_token(64)
    try:
        url = await client.authorize_url(state, nonce, verifier)
    except (SignInRefused, aiohttp.ClientError, TimeoutError) as exc:
        log.warning("single sign-on: the provider could not be read: %s", exc)
        raise PageError(502, "The sign-in provider could not be reached. Try again, or sign in another way.") from None
    now = request.config_dict[CLOCK].now()
    pending = request.config_dict[SIGNER].sign(PENDING, {"s": state, "n": nonce, "v": verifier}, now + PENDING_MAX_AGE)
    resp = web.HTTPSeeOther(url)
    _pending_cookie(resp, settings, pending)
    raise resp


def _pending_cookie(resp: web.StreamResponse, settings: Settings, value: str) -> None:
    secure = urlsplit(settings.server.public_url).scheme == "https"
    resp.set_cookie(
        PENDING_COOKIE,
        value,
        max_age=int(PENDING_MAX_AGE.total_seconds()),
        path="/login/oidc",
        httponly=True,
        samesite="Lax",
        secure=secure,
    )


@routes.get(CALLBACK)
async def callback(request: web.Request) -> NoReturn:
    """The provider's redirect: check the state against the cookie (once), exchange the code,
    check the ID token, store the claimed groups, and start a session if the user has a role."""
    client, q = _client(request), request.query
    now = request.config_dict[CLOCK].now()
    try:
        pending = request.config_dict[SIGNER].verify(PENDING, request.cookies.get(PENDING_COOKIE, ""), now)
    except GatewayError:
        raise PageError(400, "This sign-in expired or did not start here. Sign in again.") from None
    state = q.get("state", "")
    given = state.encode("utf-8", "surrogateescape")  # bytes: a non-ASCII state is simply wrong, not a 500
    if not (isinstance(pending.get("s"), str) and hmac.compare_digest(given, pending["s"].encode())):
        raise PageError(400, "state: does not match this browser's sign-in. Sign in again.")
    if "error" in q:
        raise PageError(401, f"The provider did not sign you in: {q.get('error', '')[:100]}.")
    if not await request.config_dict[WEB_SESSIONS].first_use(f"web-oidc:{state}"):
        raise PageError(400, "state: this sign-in was already used. Sign in again.")
    try:
        claims = await client.claims(q.get("code", ""), str(pending.get("v")), str(pending.get("n")), now)
        name = identity_name(claims, client.settings.identity_claim)
    except SignInRefused as exc:
        log.warning("single sign-on refused: %s", exc.message)
        raise PageError(401, f"Sign-in refused: {exc.message}.") from None
    except (aiohttp.ClientError, TimeoutError) as exc:
        log.warning("single sign-on: the provider could not be reached: %s", exc)
        raise PageError(502, "The sign-in provider could not be reached. Try again.") from None
    await _sign_in(request, client.settings, name, claims)


async def _sign_in(request: web.Request, oidc: OidcSettings, name: str, claims: Mapping[str, Any]) -> NoReturn:
    settings: Settings = request.config_dict[SETTINGS]
    identities, sessions = settings.identities, request.config_dict[WEB_SESSIONS]
    actor = f"{WEB}:{name}"
    groups = oidc.groups(claims.get(oidc.groups_claim), identities.groups)
    await sessions.set_claimed_groups(actor, groups)  # replaced at each sign-in, even with none
    if settings.web.role(name, lambda g: identities.in_group(g, actor, groups)) is None:
        raise PageError(403, f"{name} signed in, but is not a web approver or viewer here (web.approvers).")
    await end_session(request)  # the session this browser had, if its cookie came along
    await request.config_dict[COOKIES].start(name)


__all__ = ["OIDC", "OidcClient", "Provider", "SignInRefused", "check_id_token", "identity_name", "routes"]
