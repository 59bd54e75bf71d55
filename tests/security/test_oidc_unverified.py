"""An address the provider did not verify never becomes a web identity, even as `sub`.

With `identity_claim = "email"` a person whose `email_verified` is not true signs in as their
`sub`. Some providers make `sub` the address the user typed (a "sub mode: e-mail" setting, or a
self-service account): taking such a `sub` as the name would take the unverified address after
all, and sign the stranger in as the approver `web:alice@example.com`. A `sub` that reads as an
address is refused in that case, with no session and no claimed groups.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.http.app import create_app
from gateway.http.keys import RUNTIME
from gateway.runtime import Runtime
from tests.security.test_oidc import CLIENT_ID, LONG_AGO, SECRET, Issuer, _begin, _claims, _signed, issuer  # noqa: F401

VICTIM = "alice@example.com"


@pytest.fixture
async def sso(
    aiohttp_client: Callable[..., Any],
    settings_factory: Callable[..., Any],
    issuer: Issuer,  # noqa: F811
) -> AsyncIterator[TestClient[Any, Any]]:
    oidc = {"issuer": issuer.url, "client_id": CLIENT_ID, "client_secret": SECRET, "group_map": {"fin": "finance"}}
    settings = settings_factory(web={"approvers": [VICTIM, "group:finance"], "oidc": oidc}, groups={"finance": {}})
    rt = Runtime(settings, owner="test")  # the real clock, as the tokens minted here
    yield await aiohttp_client(create_app(settings, runtime=rt, background=False))


@pytest.mark.parametrize("verified", [False, None, "true"])
async def test_an_unverified_address_as_sub_signs_in_as_nobody(
    sso: TestClient[Any, Any],
    issuer: Issuer,  # noqa: F811
    verified: Any,
) -> None:
    sent = await _begin(sso)
    claims = _claims(issuer, sent["nonce"], sub="Alice@Example.com", email=VICTIM, email_verified=verified)
    issuer.token = _signed(claims)
    resp = await sso.get(f"/login/oidc/callback?code=c1&state={sent['state']}", allow_redirects=False)
    assert resp.status == 401 and "verified" in await resp.text()
    assert "hitl_session" not in resp.cookies
    assert (await sso.get("/", allow_redirects=False)).status == 303  # not signed in
    rt: Runtime = sso.server.app[RUNTIME]
    assert await rt.store.claimed_groups(f"web:{VICTIM}", LONG_AGO) == frozenset()
