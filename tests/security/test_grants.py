"""Standing grants cannot be stretched (issue 33): a grant covers only the args, agent, step and
run it was made for, dies at its expiry and on revocation, and no agent can make, read or revoke
one. Over real HTTP against the in-process app, on a SQLite file, with a FakeClock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.core.models import Status
from gateway.settings import Settings
from gateway.testing import FakeClock
from tests.conftest import OPERATOR, suspend_body

BILLING_KEY, MAIL_KEY = "agent-billing-key-0123456789abcdef", "agent-mail-key-0123456789abcdef"
BILLING = {"Authorization": f"Bearer {BILLING_KEY}"}
MAIL = {"Authorization": f"Bearer {MAIL_KEY}"}
Client = TestClient[Any, Any]


@pytest.fixture
def settings(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory(
        security={"agents": {"billing": BILLING_KEY, "mail": MAIL_KEY}},
        policies={"default": {"grants": ["1h", "run"], "grant_max": "8h"}},
    )


async def suspend(client: Client, who: dict[str, str] = BILLING, **over: Any) -> dict[str, Any]:
    resp = await client.post("/v1/suspend", json=suspend_body(**over), headers=who)
    assert resp.status in (200, 201), await resp.text()
    body: dict[str, Any] = await resp.json()
    return body


async def granted(client: Client, grant: str = "1h", **over: Any) -> str:
    """A suspend approved by the operator with `grant`; the grant's id."""
    a = await suspend(client, **over)
    resp = await client.post(
        f"/v1/approvals/{a['id']}/decision", json={"outcome": "approve", "grant": grant}, headers=OPERATOR
    )
    assert resp.status == 200, await resp.text()
    items = (await (await client.get("/v1/grants", headers=OPERATOR)).json())["items"]
    return str(next(g["id"] for g in items if g["approval_id"] == a["id"]))


async def test_a_grant_covers_the_same_args_only(client: Client) -> None:
    gid = await granted(client, args={"amount": 100, "currency": "EUR"})
    same = await suspend(client, run_id="run-2", args={"currency": "EUR", "amount": 100})
    assert same["status"] == Status.APPROVED.value
    view = await (await client.get(f"/v1/approvals/{same['id']}", headers=OPERATOR)).json()
    assert (view["decision"]["decided_by"], view["decision"]["source"]) == (f"grant:{gid}", "grant")
    for args in ({"amount": 101, "currency": "EUR"}, {"amount": 100}, {"amount": 100, "currency": "EUR", "x": 1}):
        other = await suspend(client, run_id="run-3", args=args)
        assert other["status"] == Status.WAITING.value, args
    assert (await suspend(client, run_id="run-4", step="refund", args={"amount": 100, "currency": "EUR"}))[
        "status"
    ] == Status.WAITING.value


async def test_a_grant_dies_at_its_expiry(client: Client, clock: FakeClock) -> None:
    await granted(client)
    clock.advance(3599)
    assert (await suspend(client, run_id="run-2"))["status"] == Status.APPROVED.value
    clock.advance(1)
    assert (await suspend(client, run_id="run-3"))["status"] == Status.WAITING.value
    assert (await (await client.get("/v1/grants", headers=OPERATOR)).json())["items"] == []
    every = (await (await client.get("/v1/grants?all=true", headers=OPERATOR)).json())["items"]
    assert [g["uses"] for g in every] == [1]


async def test_a_grant_dies_on_revocation(client: Client) -> None:
    gid = await granted(client)
    resp = await client.delete(f"/v1/grants/{gid}", headers=OPERATOR)
    assert resp.status == 200 and (await resp.json())["revoked_by"] == "operator:test"
    assert (await suspend(client, run_id="run-2"))["status"] == Status.WAITING.value
    again = await client.delete(f"/v1/grants/{gid}", headers=OPERATOR)  # idempotent
    assert again.status == 200
    assert (await client.delete("/v1/grants/nope", headers=OPERATOR)).status == 404


async def test_an_agent_cannot_create_read_or_revoke_grants(client: Client) -> None:
    gid = await granted(client)
    a = await suspend(client, run_id="run-2", args={"amount": 1})
    for who in (BILLING, MAIL):
        resp = await client.post(
            f"/v1/approvals/{a['id']}/decision", json={"outcome": "approve", "grant": "1h"}, headers=who
        )
        assert resp.status == 403 and (await resp.json())["error"]["code"] == "operator_required"
        for method, path in (("GET", "/v1/grants"), ("GET", "/v1/grants?all=true"), ("DELETE", f"/v1/grants/{gid}")):
            resp = await client.request(method, path, headers=who)
            assert resp.status == 403, (method, path)
            assert (await resp.json())["error"]["code"] == "operator_required"
    items = (await (await client.get("/v1/grants", headers=OPERATOR)).json())["items"]
    assert [(g["id"], g["revoked_at"]) for g in items] == [(gid, None)]  # one grant, still live
    # nor through a policy of its own: an inline policy that offers grants is refused
    inline = {"timeout": "30m", "grants": ["1h"]}
    resp = await client.post("/v1/suspend", json=suspend_body(run_id="run-9", policy=inline), headers=BILLING)
    assert resp.status == 403 and (await resp.json())["error"]["details"]["field"] == "policy.grants"


async def test_a_grant_for_one_agent_does_not_cover_another(client: Client) -> None:
    await granted(client)
    assert (await suspend(client, MAIL))["status"] == Status.WAITING.value  # same run id, step and args
    assert (await suspend(client, BILLING, run_id="run-2"))["status"] == Status.APPROVED.value


async def test_a_run_grant_covers_only_its_run_until_the_cap(client: Client, clock: FakeClock) -> None:
    await granted(client, "run", run_id="run-1", args={"n": 1}, idempotency_key="k1")
    assert (await suspend(client, run_id="run-1", idempotency_key="k2", args={"n": 1}))["status"] == "approved"
    assert (await suspend(client, run_id="run-2", args={"n": 1}))["status"] == Status.WAITING.value
    clock.advance(8 * 3600)  # grant_max
    assert (await suspend(client, run_id="run-1", idempotency_key="k3", args={"n": 1}))["status"] == "waiting_approval"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"outcome": "reject", "grant": "1h"}, "grant"),
        ({"outcome": "approve", "grant": "2h"}, "grant"),
        ({"outcome": "approve", "grant": "soon"}, "grant"),
        ({"outcome": "approve", "grant": "1h", "args": {"amount": 1}}, "grant"),
        ({"outcome": "approve", "grant": 3600}, "grant"),
    ],
)
async def test_a_grant_the_policy_does_not_offer_is_a_400_naming_grant(
    client: Client, body: dict[str, Any], field: str
) -> None:
    a = await suspend(client, editable=True)
    resp = await client.post(f"/v1/approvals/{a['id']}/decision", json=body, headers=OPERATOR)
    assert resp.status == 400, await resp.text()
    assert (await resp.json())["error"]["details"]["field"] == field
    view = await (await client.get(f"/v1/approvals/{a['id']}", headers=OPERATOR)).json()
    assert view["status"] == "waiting_approval"
    assert (await (await client.get("/v1/grants", headers=OPERATOR)).json())["items"] == []
