"""An ID token is only a sign-in when it is the provider's, for us, now, and for this browser.

Tokens are minted here with our own keys and served by a small issuer on loopback (discovery,
JWKS, token endpoint), so each claim can be wrong on its own; the happy path against a real
provider is tests/web/oidc. Each refusal goes through the gateway's callback: 401 (400 for a
state that is not this browser's), no session, and no claimed groups stored.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from joserfc import jwt
from joserfc.jwk import OctKey, RSAKey

from gateway.http.app import create_app
from gateway.http.keys import RUNTIME
from gateway.runtime import Runtime

LONG_AGO = datetime(2000, 1, 1, tzinfo=UTC)  # claims made since: all of them

CLIENT_ID, SECRET = "hitl-gateway", "test-client-secret-0123456789"
KEY = RSAKey.generate_key(2048, parameters={"kid": "k1"})
OTHER = RSAKey.generate_key(2048, parameters={"kid": "k1"})  # same kid, another key: a forgery


class Issuer:
    """Discovery, JWKS and a token endpoint that answers with `token` (set by each test)."""

    def __init__(self) -> None:
        self.token = ""
        self.answer: web.Response | None = None  # another answer of the token endpoint
        self.codes: list[str] = []
        self.app = web.Application()
        self.app.router.add_get("/.well-known/openid-configuration", self.discovery)
        self.app.router.add_get("/jwks", self.jwks)
        self.app.router.add_post("/token", self.exchange)
        self.url = ""

    async def discovery(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "issuer": self.url,
                "authorization_endpoint": f"{self.url}/auth",
                "token_endpoint": f"{self.url}/token",
                "jwks_uri": f"{self.url}/jwks",
            }
        )

    async def jwks(self, request: web.Request) -> web.Response:
        return web.json_response({"keys": [KEY.as_dict(private=False)]})

    async def exchange(self, request: web.Request) -> web.Response:
        form = await request.post()
        assert form.get("code_verifier") and form.get("grant_type") == "authorization_code"
        self.codes.append(str(form.get("code")))
        if self.answer is not None:
            return self.answer
        return web.json_response({"id_token": self.token, "token_type": "Bearer", "access_token": "x"})


@pytest.fixture
async def issuer() -> AsyncIterator[Issuer]:
    found = Issuer()
    server = TestServer(found.app, host="127.0.0.1")
    await server.start_server()
    found.url = str(server.make_url("")).rstrip("/")
    yield found
    await server.close()


@pytest.fixture
async def gw(
    aiohttp_client: Callable[..., Any], settings_factory: Callable[..., Any], issuer: Issuer
) -> AsyncIterator[TestClient[Any, Any]]:
    oidc = {"issuer": issuer.url, "client_id": CLIENT_ID, "client_secret": SECRET, "group_map": {"fin": "finance"}}
    settings = settings_factory(web={"approvers": ["group:finance"], "oidc": oidc}, groups={"finance": {}})
    rt = Runtime(settings, owner="test")  # the real clock, as the tokens minted here
    yield await aiohttp_client(create_app(settings, runtime=rt, background=False))


async def _begin(gw: TestClient[Any, Any]) -> dict[str, str]:
    """Press "Sign in with SSO": the state and nonce the gateway sent to the provider."""
    resp = await gw.get("/login/oidc", allow_redirects=False)
    assert resp.status == 303
    query = parse_qs(urlsplit(resp.headers["Location"]).query)
    assert query["code_challenge_method"] == ["S256"] and query["code_challenge"][0]
    return {k: v[0] for k, v in query.items()}


def _claims(issuer: Issuer, sent_nonce: str, **over: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {"iss": issuer.url, "aud": CLIENT_ID, "sub": "u-1", "iat": now, "exp": now + 300, "nonce": sent_nonce}
    claims |= {"email": "carol@example.com", "email_verified": True, "groups": ["fin"]}
    return {k: v for k, v in (claims | over).items() if v is not None}


def _signed(claims: dict[str, Any], key: Any = KEY, alg: str = "RS256") -> str:
    return jwt.encode({"alg": alg, "kid": "k1"}, claims, key)


async def _signed_in(gw: TestClient[Any, Any]) -> bool:
    return (await gw.get("/", allow_redirects=False)).status == 200


async def _stored(gw: TestClient[Any, Any]) -> frozenset[str]:
    rt: Runtime = gw.server.app[RUNTIME]
    return await rt.store.claimed_groups("web:carol@example.com", LONG_AGO)


async def test_a_good_token_signs_in(gw: TestClient[Any, Any], issuer: Issuer) -> None:
    sent = await _begin(gw)
    issuer.token = _signed(_claims(issuer, sent["nonce"]))
    resp = await gw.get(f"/login/oidc/callback?code=c1&state={sent['state']}", allow_redirects=False)
    assert resp.status == 303 and resp.headers["Location"] == "/"
    assert await _signed_in(gw) and await _stored(gw) == {"finance"}
    # the same state again (a replayed callback) is refused, even with the cookie
    again = await gw.get(f"/login/oidc/callback?code=c1&state={sent['state']}", allow_redirects=False)
    assert again.status == 400 and "already used" in await again.text()


def _bad_tokens(issuer: Issuer, nonce: str) -> dict[str, str]:
    now = int(time.time())
    return {
        "another issuer": _signed(_claims(issuer, nonce, iss="https://evil.example")),
        "another audience": _signed(_claims(issuer, nonce, aud="someone-else")),
        "expired": _signed(_claims(issuer, nonce, iat=now - 7200, exp=now - 3600)),
        "bad signature": _signed(_claims(issuer, nonce), OTHER),
        "signed with the client secret": _signed(_claims(issuer, nonce), OctKey.import_key(SECRET), "HS256"),
        "another nonce": _signed(_claims(issuer, "not-" + nonce)),
        "no nonce": _signed(_claims(issuer, nonce, nonce=None)),
        "no expiry": _signed(_claims(issuer, nonce, exp=None)),
        "many audiences, not issued to us": _signed(_claims(issuer, nonce, aud=[CLIENT_ID, "other"])),
        "not a token": "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
    }


@pytest.mark.parametrize(
    "case",
    [
        "another issuer",
        "another audience",
        "expired",
        "bad signature",
        "signed with the client secret",
        "another nonce",
        "no nonce",
        "no expiry",
        "many audiences, not issued to us",
        "not a token",
    ],
)
async def test_a_bad_id_token_is_refused(gw: TestClient[Any, Any], issuer: Issuer, case: str) -> None:
    sent = await _begin(gw)
    issuer.token = _bad_tokens(issuer, sent["nonce"])[case]
    resp = await gw.get(f"/login/oidc/callback?code=c1&state={sent['state']}", allow_redirects=False)
    assert resp.status == 401, case
    assert "Sign-in refused" in await resp.text()
    assert "hitl_session" not in resp.cookies
    assert not await _signed_in(gw) and await _stored(gw) == frozenset()


async def test_a_wrong_or_missing_state_is_refused_before_the_provider_is_asked(
    gw: TestClient[Any, Any], issuer: Issuer
) -> None:
    sent = await _begin(gw)
    issuer.token = _signed(_claims(issuer, sent["nonce"]))
    for query in (f"code=c1&state=x{sent['state']}", "code=c1", "code=c1&state=", "code=c1&state=%C3%A9t%C3%A9"):
        resp = await gw.get(f"/login/oidc/callback?{query}", allow_redirects=False)
        assert resp.status == 400 and "state" in await resp.text()
    gw.session.cookie_jar.clear()  # another browser: the right state without this one's cookie
    resp = await gw.get(f"/login/oidc/callback?code=c1&state={sent['state']}", allow_redirects=False)
    assert resp.status == 400
    assert issuer.codes == [] and not await _signed_in(gw) and await _stored(gw) == frozenset()


async def test_without_oidc_the_routes_do_not_exist(client: TestClient[Any, Any]) -> None:
    assert (await client.get("/login/oidc", allow_redirects=False)).status == 404
    assert "Sign in with SSO" not in await (await client.get("/login")).text()


ACCESS_TOKEN = "at-secret-0123456789abcdef"


@pytest.mark.parametrize(
    "answer",
    [
        web.json_response({"access_token": ACCESS_TOKEN, "token_type": "Bearer"}),  # no ID token
        web.json_response({"error": "invalid_grant", "access_token": ACCESS_TOKEN}, status=400),
        web.Response(text="<html>proxy error</html>", status=502),  # not JSON
    ],
    ids=["no-id-token", "error", "not-json"],
)
async def test_a_token_answer_without_an_id_token_is_refused_and_never_logged(
    gw: TestClient[Any, Any], issuer: Issuer, answer: web.Response, caplog: pytest.LogCaptureFixture
) -> None:
    """A 401 page, not a 500; the answer's other fields (an access token) reach neither the page
    nor the log."""
    sent = await _begin(gw)
    issuer.answer = answer
    resp = await gw.get(f"/login/oidc/callback?code=c1&state={sent['state']}", allow_redirects=False)
    page = await resp.text()
    assert resp.status == 401 and "refused the code" in page
    assert ACCESS_TOKEN not in page and ACCESS_TOKEN not in caplog.text
    assert not await _signed_in(gw) and await _stored(gw) == frozenset()


async def test_a_claimed_group_lasts_as_long_as_a_session_may(gw: TestClient[Any, Any]) -> None:
    """Removed from a group at the provider, a person keeps it at most web.session_max_age (12 h
    by default) without signing in again, on every channel, not until their next sign-in."""
    rt: Runtime = gw.server.app[RUNTIME]
    now = rt.clock.now()
    await rt.store.set_claimed_groups("web:carol@example.com", ["finance"], now - timedelta(hours=11))
    assert await rt.service.authorizer.claimed("web:carol@example.com") == {"finance"}
    await rt.store.set_claimed_groups("web:carol@example.com", ["finance"], now - timedelta(hours=13))
    assert await rt.service.authorizer.claimed("web:carol@example.com") == frozenset()
