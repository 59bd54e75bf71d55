"""Sign-in (password and one-time link), session cookies, CSRF, and who sees what."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web

from gateway.config import load_settings
from gateway.core.errors import ConfigError, GatewayError
from gateway.http.web.auth import hash_password, login_link, verify_password
from gateway.http.web.sessions import COOKIES
from gateway.http.web.subapp import WEB_APP
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.telemetry.logs import SecretFilter
from gateway.testing import TEST_SECRET, FakeClock
from tests.helpers import table_counts
from tests.web.conftest import HASH, PASSWORD, csrf_of, sign_in


def test_scrypt_round_trip() -> None:
    hashed = hash_password("s3cret-pass", n=2**10)
    assert hashed.startswith("scrypt$1024$8$1$")
    assert verify_password("s3cret-pass", hashed)
    assert not verify_password("s3cret-pasS", hashed)
    assert not verify_password("s3cret-pass", "scrypt$garbage")


def test_web_config_from_env_and_errors() -> None:
    env = {
        "HITL_SECURITY_SECRET_KEYS": TEST_SECRET,
        "HITL_WEB_APPROVERS": "alice,bob",
        "HITL_WEB_VIEWERS": "victor",
        "HITL_WEB_PASSWORDS": f"alice={HASH}",
        "HITL_WEB_SESSION_MAX_AGE": "2h",
    }
    web = load_settings(None, env=env).web
    assert web.approvers == ("alice", "bob") and web.role("victor") == "viewer" and web.role("eve") is None
    assert web.passwords == {"alice": HASH} and web.session_max_age.total_seconds() == 7200
    with pytest.raises(ConfigError, match=r"web.passwords.alice: expected a hash"):
        load_settings(None, env={**env, "HITL_WEB_PASSWORDS": "alice=plaintext"})
    with pytest.raises(ConfigError, match=r"web.passwords.eve: not listed"):
        load_settings(None, env={**env, "HITL_WEB_PASSWORDS": f"eve={HASH}"})
    with pytest.raises(ConfigError, match=r"web.approvers\[0\]"):
        load_settings(None, env={**env, "HITL_WEB_APPROVERS": "al ice"})


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/"),
        ("GET", "/dashboard"),
        ("GET", "/approvals/{id}"),
        ("POST", "/approvals/{id}/decision"),
        ("POST", "/jobs/{id}/retry"),
    ],
)
async def test_signed_out_users_see_nothing(web: Any, web_rt: Runtime, method: str, path: str) -> None:
    approval, _ = await web_rt.service.suspend(SuspendRequest("run-1", "pay", "Pay ACME"))
    before = await table_counts(web_rt)
    resp = await web.request(method, path.format(id=approval.id), data={"outcome": "approve"}, allow_redirects=False)
    assert resp.status == 303 and resp.headers["Location"] == "/login"
    assert "Pay ACME" not in await resp.text()
    assert await table_counts(web_rt) == before


async def test_login_failures(web: Any) -> None:
    for name, password in (("alice", "wrong password"), ("mallory", PASSWORD), ("bob", PASSWORD)):
        resp = await sign_in(web, name, password)  # bob is an approver without a password
        assert resp.status == 401
        assert "Wrong name or password" in await resp.text()
        assert "hitl_session" not in resp.cookies
    assert (await web.get("/", allow_redirects=False)).status == 303


async def test_password_guessing_is_throttled(web: Any, clock: FakeClock) -> None:
    for _ in range(5):
        assert (await sign_in(web, "alice", "guess")).status == 401
    blocked = await sign_in(web, "alice", PASSWORD)  # even the right password, for a while
    assert blocked.status == 429 and "Too many failed sign-ins" in await blocked.text()
    assert (await sign_in(web, "victor", PASSWORD)).status == 303  # other names are not locked
    clock.advance(minutes=16)
    assert (await sign_in(web, "alice", PASSWORD)).status == 303


async def test_login_sets_a_strict_http_only_session(web: Any, web_rt: Runtime) -> None:
    await web_rt.service.suspend(SuspendRequest("run-1", "pay", "Pay ACME"))
    resp = await sign_in(web)
    assert resp.status == 303 and resp.headers["Location"] == "/"
    cookie = next(c for c in resp.headers.getall("Set-Cookie") if c.startswith("hitl_session="))
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Secure" not in cookie
    page = await web.get("/")
    assert page.status == 200 and "Pay ACME" in await page.text()
    again = await web.get("/login", allow_redirects=False)
    assert again.status == 303 and again.headers["Location"] == "/"
    assert "alice (approver)" in await page.text()


async def test_session_cookie_is_secure_behind_https(aiohttp_client: Any, settings_factory: Any, clock: Any) -> None:
    from gateway.http.app import create_app
    from tests.web.conftest import WEB

    settings = settings_factory(web=WEB, server={"public_url": "https://hitl.example.com"})
    rt = Runtime(settings, clock=clock)
    app = create_app(settings, runtime=rt, background=False)
    client = await aiohttp_client(app)
    page = await client.get("/login")
    csrf_cookie = next(c for c in page.headers.getall("Set-Cookie") if c.startswith("hitl_csrf="))
    assert "Secure" in csrf_cookie and "HttpOnly" in csrf_cookie and "SameSite=Strict" in csrf_cookie
    with pytest.raises(web.HTTPSeeOther) as redirect:
        await app[WEB_APP][COOKIES].start("alice")
    session = redirect.value.cookies["hitl_session"]
    assert session["secure"] and session["httponly"] and session["samesite"] == "Strict"


async def test_forged_or_expired_session_is_signed_out(web: Any, clock: FakeClock) -> None:
    await sign_in(web)
    assert (await web.get("/", allow_redirects=False)).status == 200
    clock.advance(hours=13)  # session_max_age is 12h
    assert (await web.get("/", allow_redirects=False)).status == 303
    web.session.cookie_jar.update_cookies({"hitl_session": "eyJ1IjoiYWxpY2UifQ.forged"})
    assert (await web.get("/", allow_redirects=False)).status == 303


async def test_forms_without_csrf_are_refused(web: Any, web_rt: Runtime) -> None:
    approval, _ = await web_rt.service.suspend(SuspendRequest("run-1", "pay", "Pay ACME"))
    resp = await web.post("/login", data={"name": "alice", "password": PASSWORD}, allow_redirects=False)
    assert resp.status == 403 and "CSRF" in await resp.text()
    await sign_in(web)
    before = await table_counts(web_rt)
    for data in ({"outcome": "approve"}, {"outcome": "approve", "csrf": "x" * 32}):
        resp = await web.post(f"/approvals/{approval.id}/decision", data=data, allow_redirects=False)
        assert resp.status == 403 and "CSRF" in await resp.text()
    assert await table_counts(web_rt) == before


async def test_one_time_login_link(web: Any, web_rt: Runtime, clock: FakeClock) -> None:
    url = login_link(web_rt.settings, web_rt.signer, "bob", clock.now())
    path = url.split("://", 1)[1].split("/", 1)[1]
    page = await web.get("/" + path)  # a chat preview fetching the link must not burn it
    assert page.status == 200 and "Continue as bob" in await page.text()
    form = {"csrf": csrf_of(await page.text()), "token": path.rsplit("/", 1)[1]}
    resp = await web.post("/login/link", data=form, allow_redirects=False)
    assert resp.status == 303
    assert "bob (approver)" in await (await web.get("/")).text()
    await web.post("/logout", data={"csrf": csrf_of(await (await web.get("/")).text())})
    assert (await web.get("/", allow_redirects=False)).status == 303
    page = await web.get("/" + path)
    form["csrf"] = csrf_of(await page.text())
    again = await web.post("/login/link", data=form, allow_redirects=False)
    assert again.status == 410 and "already used" in await again.text()


async def test_bad_and_expired_login_links(web: Any, web_rt: Runtime, clock: FakeClock) -> None:
    url = login_link(web_rt.settings, web_rt.signer, "alice", clock.now())
    token = url.rsplit("/", 1)[1]
    assert (await web.get(f"/login/link/{token[:-2]}xx")).status == 401
    clock.advance(minutes=16)
    assert (await web.get(f"/login/link/{token}")).status == 410
    access_log = f'127.0.0.1 "GET /login/link/{token} HTTP/1.1" 200 1234'
    assert token not in SecretFilter().redact(access_log)  # the access log never shows a live link
    with pytest.raises(GatewayError, match=r"not in web\.approvers"):
        login_link(web_rt.settings, web_rt.signer, "mallory", clock.now())


@pytest.mark.parametrize("path", ["/login", "/login/link", "/logout"])
async def test_a_multipart_body_without_boundary_is_a_400_page_not_a_500(web: Any, path: str) -> None:
    # Found by `make fuzz` (schemathesis): aiohttp's form parser raised ValueError -> 500.
    resp = await web.post(path, data=b"x", headers={"Content-Type": "multipart/form-data"})
    assert resp.status == 400, await resp.text()
    assert "could not be read" in await resp.text()


async def test_single_sign_on_not_configured_is_a_404_without_its_extra(
    web: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gateway installed without the `oidc` extra and without [web.oidc]: /login/oidc is a page
    that does not exist, not a crash on a library that is not there (found by `make fuzz`)."""
    import sys

    monkeypatch.setitem(sys.modules, "authlib.common.security", None)  # as if not installed
    resp = await web.get("/login/oidc", allow_redirects=False)
    assert resp.status == 404
