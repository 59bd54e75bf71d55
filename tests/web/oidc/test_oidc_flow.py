"""Sign in to the web inbox through a real OpenID provider (npm's oidc-provider, started here):
the authorization code flow with PKCE, the identity `web:<verified email>`, and the groups claim
mapped into `[groups]`, which then decide who may approve (and replace the last sign-in's).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from gateway.core.errors import NotAnApprover
from gateway.core.models import Outcome, Status
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.service.approvals import SuspendRequest
from gateway.testing import make_settings
from tests.web.conftest import csrf_of
from tests.web.oidc.provider import CLIENT_ID, CLIENT_SECRET, free_port, provider, sign_in

LONG_AGO = datetime(2000, 1, 1, tzinfo=UTC)  # claims made since: all of them

pytestmark = pytest.mark.subprocess
_ROUND = re.compile(r'name="(round)" value="([^"]*)"')
ACCOUNTS = {
    "alice": {"email": "Alice@Example.com", "email_verified": True, "groups": ["fin-team", "unmapped"]},
    "bob": {"email": "bob@example.com", "email_verified": False, "groups": []},
}


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[tuple[str, Runtime, Path]]:
    port = free_port()
    gateway = f"http://127.0.0.1:{port}"
    accounts = tmp_path / "accounts.json"
    accounts.write_text(json.dumps(ACCOUNTS))
    async with provider(f"{gateway}/login/oidc/callback", accounts) as issuer:
        settings = make_settings(
            f"sqlite:///{tmp_path / 'gw.db'}",
            {
                "server": {"public_url": gateway},
                "web": {
                    "approvers": ["group:finance"],
                    "oidc": {
                        "issuer": issuer,
                        "client_id": CLIENT_ID,
                        "client_secret": CLIENT_SECRET,
                        "scopes": ["openid", "email", "groups"],
                        "group_map": {"fin-team": "finance"},
                    },
                },
                "groups": {"finance": {"members": []}},
            },
        )
        rt = Runtime(settings, owner="test")  # the real clock: the provider's tokens are real
        server = TestServer(create_app(settings, runtime=rt, background=False), host="127.0.0.1", port=port)
        await server.start_server()
        try:
            yield gateway, rt, accounts
        finally:
            await server.close()


def _browser() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))  # cookies on 127.0.0.1


async def test_sign_in_through_the_provider_and_decide_as_the_group(stack: Any) -> None:
    gateway, rt, accounts = stack
    approval, _ = await rt.service.suspend(SuspendRequest("run-1", "pay", "Pay ACME", approvers=("group:finance",)))
    async with _browser() as http:
        assert "Sign in with SSO" in await (await http.get(f"{gateway}/login")).text()
        page = await sign_in(http, gateway, "alice")
        assert page.status == 200 and str(page.url).rstrip("/") == gateway, await page.text()
        assert "alice@example.com" in await page.text()  # signed in, as the verified address
        # she approves in the inbox: an approver through the group her provider says she is in
        form = await (await http.get(f"{gateway}/approvals/{approval.id}")).text()
        fields = {"csrf": csrf_of(form), "outcome": "approve", **dict(_ROUND.findall(form)[:1])}
        done = await http.post(f"{gateway}/approvals/{approval.id}/decision", data=fields, allow_redirects=False)
        assert done.status == 303, await done.text()
    assert await rt.store.claimed_groups("web:alice@example.com", LONG_AGO) == {"finance"}  # "unmapped" maps to nothing
    decided = await rt.service.get(approval.id)
    assert decided.status is Status.APPROVED and decided.decision is not None
    assert decided.decision.decided_by == "web:alice@example.com"

    # the provider dropped her from the team: her next sign-in says so
    accounts.write_text(json.dumps({**ACCOUNTS, "alice": {**ACCOUNTS["alice"], "groups": ["other"]}}))
    async with _browser() as http:
        page = await sign_in(http, gateway, "alice")
        assert page.status == 403 and "not a web approver or viewer" in await page.text()
    assert await rt.store.claimed_groups("web:alice@example.com", LONG_AGO) == frozenset()
    second, _ = await rt.service.suspend(SuspendRequest("run-2", "pay", "Pay ACME", approvers=("group:finance",)))
    with pytest.raises(NotAnApprover):
        await rt.service.decide(second.id, Outcome.APPROVE, "web:alice@example.com", channel="web")


async def test_an_unverified_email_signs_in_as_sub_and_without_a_role_gets_no_session(stack: Any) -> None:
    gateway, rt, _ = stack
    async with _browser() as http:
        page = await sign_in(http, gateway, "bob")
        assert page.status == 403 and "bob signed in, but" in await page.text()  # web:bob (sub), not the address
        assert (await http.get(f"{gateway}/", allow_redirects=False)).status == 303  # no session
    assert await rt.store.claimed_groups("web:bob", LONG_AGO) == frozenset()  # his (empty) claim, under his sub
