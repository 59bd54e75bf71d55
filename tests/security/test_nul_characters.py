"""A NUL character anywhere in a request is a 400 that changes nothing, on either backend.

PostgreSQL's text cannot hold U+0000: an id, a filter or a form field carrying one (`%00` in a
URL, `\\x00` in a form) reached the store and came back as a 500, or half-way through a use
case. The web inbox's forms and every request's path and query now refuse it first, naming
where it was.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
from aiohttp.test_utils import TestClient

from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.testing import FakeClock
from tests.conftest import OPERATOR
from tests.helpers import table_counts
from tests.web.conftest import HASH, csrf_of, sign_in

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.fixture
def db_url(store_url: str) -> str:
    return store_url


@pytest.fixture
async def nul_gw(
    aiohttp_client: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock
) -> AsyncIterator[tuple[TestClient[Any, Any], Runtime, str]]:
    settings = settings_factory(web={"approvers": ["alice", "bob"], "passwords": {"alice": HASH}})
    rt = Runtime(settings, clock=clock, owner="test")
    client = await aiohttp_client(create_app(settings, runtime=rt, background=False))
    approval, _ = await rt.service.suspend(SuspendRequest("run-1", "pay", "Pay ACME"))
    yield client, rt, approval.id


GETS = [
    "/?run=a%00b",
    "/?channel=a%00b",
    "/?status=all&q=a%00b",
    "/approvals/a%00b",
    "/runs/a%00b",
    "/v1/approvals/a%00b",
    "/v1/approvals?run_id=a%00b",
    "/v1/delegations/a%00b",
]


@pytest.mark.parametrize("url", GETS)
async def test_a_nul_in_a_url_is_a_400(nul_gw: tuple[TestClient[Any, Any], Runtime, str], url: str) -> None:
    client, _, _ = nul_gw
    await sign_in(client)
    resp = await client.get(url, headers=OPERATOR, allow_redirects=False)
    assert resp.status == 400, (url, resp.status)
    assert "NUL" in await resp.text()


def _posts(approval_id: str, until: str) -> list[tuple[str, dict[str, str]]]:
    return [
        ("/", {"outcome": "reject", "pick:a\x00b": ""}),
        ("/", {"outcome": "reject", "comment": "a\x00b", f"pick:{approval_id}": ""}),
        ("/delegations/a%00b/revoke", {}),
        ("/grants/a%00b/revoke", {}),
        ("/jobs/a%00b/retry", {}),
        ("/approvals/a%00b/extend", {"duration": "1h"}),
        ("/approvals/a%00b/decision", {"outcome": "reject"}),
        (f"/approvals/{approval_id}/decision", {"outcome": "reject", "comment": "a\x00b"}),
        ("/push/unsubscribe", {"endpoint": "https://push.example/a\x00b"}),
        ("/delegations", {"delegate": "bob", "until": until, "reason": "a\x00b"}),
    ]


@pytest.mark.parametrize("case", range(10))
async def test_a_nul_in_a_web_form_is_a_400_and_changes_nothing(
    nul_gw: tuple[TestClient[Any, Any], Runtime, str], clock: FakeClock, case: int
) -> None:
    client, rt, approval_id = nul_gw
    await sign_in(client)
    csrf = csrf_of(await (await client.get("/")).text())
    path, form = _posts(approval_id, (clock.now() + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M"))[case]
    before = await table_counts(rt)
    delegations = await rt.store.list_delegations(clock.now(), live=False, limit=10)
    resp = await client.post(path, data=urlencode({"csrf": csrf, **form}), headers=FORM, allow_redirects=False)
    assert resp.status == 400, (path, resp.status)
    assert "NUL" in await resp.text()
    assert await table_counts(rt) == before
    assert await rt.store.list_delegations(clock.now(), live=False, limit=10) == delegations


async def test_a_nul_in_a_delegations_reason_over_the_api_is_a_400(
    nul_gw: tuple[TestClient[Any, Any], Runtime, str], clock: FakeClock
) -> None:
    client, rt, _ = nul_gw
    until = (clock.now() + timedelta(days=2)).isoformat()
    body = {"delegator": "web:alice", "delegate": "web:bob", "until": until, "reason": "away\x00"}
    resp = await client.post("/v1/delegations", json=body, headers=OPERATOR)
    assert resp.status == 400 and (await resp.json())["error"]["details"]["field"] == "reason"
    assert await rt.store.list_delegations(clock.now(), live=False, limit=10) == []
