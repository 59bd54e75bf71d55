"""Standing grants over HTTP, on both backends: an operator's approve with `"grant"` makes one in
the approve's transaction; a suspend it covers is approved at once (decided_by grant:ID, source
grant, the `approved` event by grant:ID, a named worker's job in the same commit), each use
counted; `grant_fields` narrows what it covers; a rule's deny still denies."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.core.grants import Grant
from gateway.http.keys import RUNTIME
from gateway.settings import Settings
from gateway.testing import TEST_OPERATOR_KEY
from tests.conftest import AUTH, OPERATOR, suspend_body, suspended

Client = TestClient[Any, Any]
DENY_BIG = [{"name": "too-big", "when": "args.amount > 1000000", "then": "deny", "reason": "never"}]


@pytest.fixture
def db_url(store_url: str) -> str:
    return store_url


@pytest.fixture
def settings(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory(
        workers={"agent": {"command": ["true"]}},
        policies={
            "default": {"grants": ["1h", "run"]},
            "by-customer": {"grants": ["8h"], "grant_max": "8h", "grant_fields": ["customer"]},
            "two": {"grants": ["1h"], "quorum": 2},
        },
        rule=DENY_BIG,
        security={"operators": {"test": TEST_OPERATOR_KEY, "second": "second-operator-key-0123456789abcdef"}},
    )


async def _approve(client: Client, approval_id: str, **body: Any) -> Any:
    return await client.post(
        f"/v1/approvals/{approval_id}/decision", json={"outcome": "approve", **body}, headers=OPERATOR
    )


async def test_an_approve_with_a_grant_decides_the_next_samesuspended(client: Client) -> None:
    first = await suspended(client, worker="agent")
    resp = await _approve(client, first["id"], grant="1h")
    assert resp.status == 200, await resp.text()
    events = (await (await client.get(f"/v1/approvals/{first['id']}/events", headers=OPERATOR)).json())["items"]
    approved = next(e for e in events if e["kind"] == "approved")
    [grant] = (await (await client.get("/v1/grants", headers=OPERATOR)).json())["items"]
    assert approved["data"]["grant"] == grant["id"] and approved["data"]["grant_for"] == "1h"
    assert grant["granted_by"] == "operator:test" and grant["step"] == "charge" and grant["run_id"] is None
    assert grant["grant"] == "1h" and grant["live"] and grant["uses"] == 0

    second = await suspended(client, run_id="run-2", worker="agent")
    assert second["status"] == "approved"
    view = await (await client.get(f"/v1/approvals/{second['id']}", headers=AUTH)).json()
    decision = view["decision"]
    assert (decision["decided_by"], decision["source"]) == (f"grant:{grant['id']}", "grant")
    assert "operator:test" in decision["reason"]
    assert view["resume_job"] is not None and view["cards"] == []
    events = (await (await client.get(f"/v1/approvals/{second['id']}/events", headers=AUTH)).json())["items"]
    assert [e["kind"] for e in events] == ["suspended", "approved", "job_queued"]
    assert events[1]["actor"] == f"grant:{grant['id']}"
    assert events[1]["data"]["granted_by"] == "operator:test" and events[1]["data"]["args_hash"]
    # the replay of that suspend is the same approval, and no second use
    replay = await client.post("/v1/suspend", json=suspend_body(run_id="run-2", worker="agent"), headers=AUTH)
    assert replay.status == 200 and (await replay.json())["id"] == second["id"]
    [grant] = (await (await client.get("/v1/grants", headers=OPERATOR)).json())["items"]
    assert grant["uses"] == 1 and grant["last_used_at"] is not None


async def test_a_replay_of_the_granting_approval_after_its_grant_is_its_own(client: Client) -> None:
    """The agent re-runs the very suspend that was approved with the grant: the same approval."""
    first = await suspended(client, idempotency_key="same")
    assert (await _approve(client, first["id"], grant="run")).status == 200
    again = await client.post("/v1/suspend", json=suspend_body(idempotency_key="same"), headers=AUTH)
    assert again.status == 200 and (await again.json())["id"] == first["id"]


async def test_grant_fields_cover_other_args_with_the_same_fields(client: Client) -> None:
    base = {"customer": "acme", "amount": 10}
    first = await suspended(client, policy="by-customer", args=base)
    assert (await _approve(client, first["id"], grant="8h")).status == 200
    more = await suspended(client, run_id="run-2", policy="by-customer", args={**base, "amount": 99})
    assert more["status"] == "approved"
    other = await suspended(client, run_id="run-3", policy="by-customer", args={**base, "customer": "initech"})
    assert other["status"] == "waiting_approval"
    none = await suspended(client, run_id="run-4", policy="by-customer", args={"amount": 10})
    assert none["status"] == "waiting_approval"


async def test_a_rules_deny_still_denies_under_a_grant(client: Client) -> None:
    first = await suspended(client, args={"amount": 2000000})
    assert first["status"] == "rejected"  # the rule, before any grant could be made
    small = await suspended(client, run_id="run-2", args={"amount": 5})
    assert (await _approve(client, small["id"], grant="1h")).status == 200
    assert (await suspended(client, run_id="run-3", args={"amount": 5}))["status"] == "approved"


async def test_one_approver_cannot_grant_where_the_policy_needs_two(client: Client) -> None:
    a = await suspended(client, policy="two")
    resp = await _approve(client, a["id"], grant="1h")
    assert resp.status == 400
    error = (await resp.json())["error"]
    assert error["details"]["field"] == "grant" and "needs 2 approvers" in error["message"]


async def test_a_grant_needs_the_policy_to_offer_it(client: Client) -> None:
    a = await suspended(client, policy="by-customer", args={"customer": "acme"})
    resp = await _approve(client, a["id"], grant="1h")
    assert resp.status == 400 and "does not offer '1h'" in (await resp.json())["error"]["message"]


async def test_a_grant_revoked_after_the_lookup_decides_nothing(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race: the suspend read the grant live, an operator revoked it before the suspend's
    transaction. The use is refused inside that transaction, and the suspend asks as usual."""
    first = await suspended(client)
    assert (await _approve(client, first["id"], grant="1h")).status == 200
    service = client.app[RUNTIME].service
    stale = (await service.grants.list())[0]
    assert (await client.delete(f"/v1/grants/{stale.id}", headers=OPERATOR)).status == 200

    async def read_before_the_revocation(*_: Any) -> Grant:
        return stale

    monkeypatch.setattr(service.grants, "covering", read_before_the_revocation)
    second = await suspended(client, run_id="run-2")
    assert second["status"] == "waiting_approval"
    [grant] = (await (await client.get("/v1/grants?all=true", headers=OPERATOR)).json())["items"]
    assert grant["uses"] == 0
