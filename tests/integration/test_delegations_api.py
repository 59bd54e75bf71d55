"""Delegation end to end, on both backends: a person delegates from the inbox's Delegations page
(an operator over /v1/delegations for anyone), the delegate sees the delegator's approvals as
theirs to decide in the inbox and decides one, and the decision, the vote, the events and the
delegation's own audit trail record `on_behalf_of` and the delegation; revoking it ends it."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.core.clock import iso
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.settings import Settings
from gateway.testing import FakeClock
from tests.conftest import OPERATOR
from tests.web.conftest import HASH, csrf_of, sign_in

Client = TestClient[Any, Any]
WEB = {"approvers": ["alice", "bob", "carol"], "passwords": {n: HASH for n in ("alice", "bob", "carol")}}
_PICK = re.compile(r'name="pick:([a-z0-9]+)"')


@pytest.fixture
def db_url(store_url: str) -> str:
    return store_url


@pytest.fixture
def settings(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory(web=WEB)


@pytest.fixture
async def rt(settings: Settings, clock: FakeClock) -> Runtime:
    return Runtime(settings, clock=clock, owner="test")


@pytest.fixture
async def app(aiohttp_client: Callable[..., Any], settings: Settings, rt: Runtime) -> AsyncIterator[Client]:
    yield await aiohttp_client(create_app(settings, runtime=rt, background=False))


async def _suspend(rt: Runtime, run: str) -> str:
    req = SuspendRequest(run, "charge", f"Charge {run}", approvers=("web:alice",))
    return (await rt.service.suspend(req))[0].id


async def _json(resp: Any, status: int = 200) -> Any:
    assert resp.status == status, await resp.text()
    return await resp.json()


async def test_delegate_from_the_inbox_decide_on_behalf_and_revoke(app: Client, rt: Runtime, clock: FakeClock) -> None:
    first, second = await _suspend(rt, "run-1"), await _suspend(rt, "run-2")
    await sign_in(app, "bob")
    assert not _PICK.findall(await (await app.get("/")).text())  # alice's approvals are not bob's to decide

    # alice delegates to bob from the Delegations page, until eight hours from now (UTC)
    await sign_in(app, "alice")
    page = await (await app.get("/delegations")).text()
    assert 'name="delegate"' in page and 'href="/delegations"' in page
    until = (clock.now() + timedelta(hours=8)).strftime("%Y-%m-%dT%H:%M")
    form = {"csrf": csrf_of(page), "delegate": "bob", "until": until, "reason": "on holiday"}
    bad = await app.post("/delegations", data={**form, "until": ""})
    assert bad.status == 400 and "until" in await bad.text()
    assert (await app.post("/delegations", data=form, allow_redirects=False)).status == 303
    [made] = (await _json(await app.get("/v1/delegations", headers=OPERATOR)))["items"]
    assert (made["delegator"], made["delegate"], made["created_by"]) == ("web:alice", "web:bob", "web:alice")
    assert made["reason"] == "on holiday" and made["active"] and made["from"] == iso(clock.now())
    assert "web:bob" in await (await app.get("/delegations")).text()

    # bob sees alice's approvals as his to decide, and approves one for her
    await sign_in(app, "bob")
    inbox = await (await app.get("/")).text()
    assert set(_PICK.findall(inbox)) == {first, second}
    assert inbox.count('<span class="muted behalf">for web:alice</span>') == 2
    assert "web:alice" in await (await app.get("/delegations")).text()  # given to him
    html = await (await app.get(f"/approvals/{first}")).text()
    resp = await app.post(
        f"/approvals/{first}/decision", data={"csrf": csrf_of(html), "outcome": "approve"}, allow_redirects=False
    )
    assert resp.status == 303
    view = await _json(await app.get(f"/v1/approvals/{first}", headers=OPERATOR))
    assert view["status"] == "approved"
    assert (view["decision"]["decided_by"], view["decision"]["on_behalf_of"]) == ("web:bob", "web:alice")
    [vote] = view["votes"]
    assert (vote["approver"], vote["on_behalf_of"], vote["delegation"]) == ("web:bob", "web:alice", made["id"])
    events = (await _json(await app.get(f"/v1/approvals/{first}/events", headers=OPERATOR)))["items"]
    approved = next(e for e in events if e["kind"] == "approved")
    assert approved["actor"] == "web:bob"
    assert (approved["data"]["on_behalf_of"], approved["data"]["delegation"]) == ("web:alice", made["id"])

    # carol, neither its delegator nor its delegate, cannot revoke it from the inbox
    await sign_in(app, "carol")
    page = await (await app.get("/delegations")).text()
    denied = await app.post(f"/delegations/{made['id']}/revoke", data={"csrf": csrf_of(page)})
    assert denied.status == 403

    # an operator revokes it: bob decides only for himself again
    revoked = await _json(await app.delete(f"/v1/delegations/{made['id']}", headers=OPERATOR))
    assert revoked["revoked_by"] == "operator:test" and not revoked["active"]
    assert (await _json(await app.get("/v1/delegations", headers=OPERATOR)))["items"] == []
    await sign_in(app, "bob")
    assert not _PICK.findall(await (await app.get("/")).text())
    html = await (await app.get(f"/approvals/{second}")).text()
    refused = await app.post(f"/approvals/{second}/decision", data={"csrf": csrf_of(html), "outcome": "approve"})
    assert refused.status == 403
    assert (await _json(await app.get(f"/v1/approvals/{second}", headers=OPERATOR)))["status"] == "waiting_approval"

    # its audit trail: made by alice, used by bob on the first approval, revoked by the operator
    one = await _json(await app.get(f"/v1/delegations/{made['id']}", headers=OPERATOR))
    assert one["uses"] == 1 and one["last_used_at"] is not None
    trail = [(e["kind"], e["actor"], e["approval_id"]) for e in one["events"]]
    assert trail == [("created", "web:alice", None), ("used", "web:bob", first), ("revoked", "operator:test", None)]
    every = (await _json(await app.get("/v1/delegations?all=true", headers=OPERATOR)))["items"]
    assert [d["id"] for d in every] == [made["id"]]


async def test_an_operator_delegates_for_anyone_and_lists_by_person(app: Client, clock: FakeClock) -> None:
    body = {
        "delegator": "web:alice",
        "delegate": "web:carol",
        "from": iso(clock.now() + timedelta(days=1)),
        "until": iso(clock.now() + timedelta(days=8)),
    }
    made = await _json(await app.post("/v1/delegations", json=body, headers=OPERATOR), 201)
    assert made["created_by"] == "operator:test" and not made["active"]  # starts tomorrow
    for of, expected in (("web:carol", [made["id"]]), ("web:alice", [made["id"]]), ("web:bob", [])):
        items = (await _json(await app.get("/v1/delegations", params={"of": of}, headers=OPERATOR)))["items"]
        assert [d["id"] for d in items] == expected, of
    assert (await app.get("/v1/delegations", params={"of": "bob"}, headers=OPERATOR)).status == 400
    assert (await app.get("/v1/delegations", params={"all": "yes"}, headers=OPERATOR)).status == 400
    assert (await app.get("/v1/delegations/nope", headers=OPERATOR)).status == 404
    assert (await app.delete("/v1/delegations/nope", headers=OPERATOR)).status == 404
    again = await _json(await app.delete(f"/v1/delegations/{made['id']}", headers=OPERATOR))
    assert (await _json(await app.delete(f"/v1/delegations/{made['id']}", headers=OPERATOR))) == again  # idempotent
