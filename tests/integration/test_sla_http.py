"""SLA policies over HTTP: validation (4xx naming the field), defaults, visibility and quorum."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.config import Settings, load_settings
from gateway.core.errors import ConfigError
from gateway.http.app import create_app
from gateway.http.keys import RUNTIME
from gateway.runtime import Runtime
from gateway.testing import FakeClock
from tests.conftest import AUTH, suspend_body
from tests.helpers import table_counts

# Three operators, each deciding as itself (operator:a, operator:b, operator:c): quorum over the API.
OPERATORS = {name: f"operator-{name}-key-0123456789" for name in "abc"}


def as_operator(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {OPERATORS[name]}"}


Client = TestClient[Any, Any]


@pytest.fixture
async def api(
    aiohttp_client: Callable[..., Any], settings_factory: Callable[..., Settings], clock: FakeClock
) -> AsyncIterator[Client]:
    settings = settings_factory(
        policies={
            "default": {"timeout": "2h", "on_timeout": "reject", "remind": ["30m"]},
            "content": {"timeout": "1h", "on_timeout": "approve"},
        },
        security={"operators": OPERATORS},
    )
    app = create_app(settings, runtime=Runtime(settings, clock=clock, owner="t"), background=False)
    yield await aiohttp_client(app)


def rt_of(client: Client) -> Runtime:
    return client.server.app[RUNTIME]


@pytest.mark.parametrize(
    ("policy", "field"),
    [
        ({"timeout": "soon"}, "policy.timeout"),
        ({"on_timeout": "maybe"}, "policy.on_timeout"),
        ({"on_timeout": "escalate"}, "policy.escalate_to"),
        ({"on_timeout": "escalate", "escalate_to": ["telegram:-100"]}, "policy.escalate_to"),
        ({"escalation_timeout": "-5m"}, "policy.escalation_timeout"),
        ({"after_escalation": "later"}, "policy.after_escalation"),
        ({"remind": ["5m", "3h"], "timeout": "1h"}, "policy.remind[1]"),
        ({"quorum": 0}, "policy.quorum"),
        ({"quorum": 4}, "policy.quorum"),  # more than the three approvers named
        ({"colour": "red"}, "policy.colour"),
    ],
)
async def test_bad_inline_policy_is_a_400_naming_the_field(api: Client, policy: dict[str, Any], field: str) -> None:
    before = await table_counts(rt_of(api))
    body = suspend_body(policy=policy, approvers=["web:a", "web:b", "web:c"])
    resp = await api.post("/v1/suspend", json=body, headers=AUTH)
    assert resp.status == 400, await resp.text()
    error = (await resp.json())["error"]
    assert error["message"].startswith(f"{field}:"), error
    assert await table_counts(rt_of(api)) == before


async def test_unknown_named_policy_is_a_400(api: Client) -> None:
    resp = await api.post("/v1/suspend", json=suspend_body(policy="nope"), headers=AUTH)
    assert resp.status == 400
    assert (await resp.json())["error"]["code"] == "unknown_policy"


async def test_default_policy_applies_and_the_sla_is_visible(api: Client, clock: FakeClock) -> None:
    resp = await api.post("/v1/suspend", json=suspend_body(), headers=AUTH)
    assert resp.status == 201
    approval_id = (await resp.json())["id"]
    view = await (await api.get(f"/v1/approvals/{approval_id}", headers=AUTH)).json()
    assert view["policy"]["name"] == "default" and view["policy"]["timeout"] == "2h"
    assert view["deadline"] == "2030-01-01T14:00:00Z"
    assert view["next_wake_at"] == "2030-01-01T13:30:00Z"
    assert view["reminders"] == [{"at": "2030-01-01T13:30:00Z", "before_deadline": "30m", "done": False}]
    await rt_of(api).scheduler.tick(clock.advance(minutes=90))
    view = await (await api.get(f"/v1/approvals/{approval_id}", headers=AUTH)).json()
    assert view["reminders"][0]["done"] is True and view["next_wake_at"] == view["deadline"]
    assert view["reminders_sent"] == 1


async def test_named_and_inline_policies_time_out_by_policy(api: Client, clock: FakeClock) -> None:
    named = (await (await api.post("/v1/suspend", json=suspend_body(policy="content"), headers=AUTH)).json())["id"]
    inline = suspend_body(run_id="run-2", policy={"timeout": "never", "name": "forever"})
    forever = (await (await api.post("/v1/suspend", json=inline, headers=AUTH)).json())["id"]
    await rt_of(api).scheduler.tick(clock.advance(days=400))
    view = await (await api.get(f"/v1/approvals/{named}", headers=AUTH)).json()
    assert view["status"] == "timed_out"
    assert view["decision"]["outcome"] == "approve" and view["decision"]["decided_by"] == "policy"
    assert view["decision"]["source"] == "policy"
    assert view["decision"]["reason"].startswith("policy 'content': no decision after")
    other = await (await api.get(f"/v1/approvals/{forever}", headers=AUTH)).json()
    assert other["status"] == "waiting_approval" and other["deadline"] is None and other["next_wake_at"] is None
    resp = await api.post(f"/v1/approvals/{named}/decision", json={"outcome": "reject"}, headers=as_operator("a"))
    assert resp.status == 409
    assert "timed out" in (await resp.json())["error"]["message"]


async def decide(api: Client, approval_id: str, by: str, outcome: str = "approve") -> dict[str, Any]:
    """`by` is operator:NAME: the operator whose key decides."""
    headers = as_operator(by.removeprefix("operator:"))
    resp = await api.post(f"/v1/approvals/{approval_id}/decision", json={"outcome": outcome}, headers=headers)
    assert resp.status == 200, await resp.text()
    body: dict[str, Any] = await resp.json()
    return body


async def test_quorum_two_of_three_with_a_duplicate_approver(api: Client) -> None:
    body = suspend_body(policy={"quorum": 2}, approvers=["operator:a", "operator:b", "operator:c"])
    approval_id = (await (await api.post("/v1/suspend", json=body, headers=AUTH)).json())["id"]
    first = await decide(api, approval_id, "operator:a")
    assert first["status"] == "waiting_approval"
    assert first["quorum"]["text"] == "1 of 2 approvals" and first["quorum"]["approved_by"] == ["operator:a"]
    assert any(d["kind"] == "sync" and d["status"] == "pending" for d in first["deliveries"])  # the card shows it
    again = await decide(api, approval_id, "operator:a")
    assert again["status"] == "waiting_approval" and again["quorum"]["approvals"] == 1
    done = await decide(api, approval_id, "operator:b")
    assert done["status"] == "approved" and done["quorum"]["text"] == "2 of 2 approvals"
    assert done["quorum"]["met"] is True
    late = await api.post(f"/v1/approvals/{approval_id}/decision", json={"outcome": "reject"}, headers=as_operator("c"))
    assert late.status == 409
    events = [
        e["kind"] for e in (await (await api.get(f"/v1/approvals/{approval_id}/events", headers=AUTH)).json())["items"]
    ]
    assert events.count("vote") == 1 and events.count("duplicate_vote") == 1 and events.count("approved") == 1


async def test_quorum_veto(api: Client) -> None:
    body = suspend_body(policy={"quorum": 2}, approvers=["operator:a", "operator:b", "operator:c"])
    approval_id = (await (await api.post("/v1/suspend", json=body, headers=AUTH)).json())["id"]
    await decide(api, approval_id, "operator:a")
    vetoed = await decide(api, approval_id, "operator:c", "reject")
    assert vetoed["status"] == "rejected" and vetoed["decision"]["decided_by"] == "operator:c"
    assert vetoed["decision"]["source"] == "operator"


def test_config_policy_errors_name_the_key(tmp_path: Any) -> None:
    path = tmp_path / "gw.toml"
    path.write_text(
        '[security]\nsecret_keys = ["0123456789abcdef0123"]\n[policies.payments]\ntimeout = "1h"\nremind = ["2h"]\n'
    )
    with pytest.raises(ConfigError) as err:
        load_settings(path, env={})
    assert err.value.key == "policies.payments.remind[0]"
    env = {"HITL_POLICIES_PAYMENTS_QUORUM": "0"}
    path.write_text('[security]\nsecret_keys = ["0123456789abcdef0123"]\n[policies.payments]\ntimeout = "1h"\n')
    with pytest.raises(ConfigError) as err:
        load_settings(path, env=env)
    assert err.value.key == "policies.payments.quorum"
    ok = load_settings(path, env={"HITL_POLICIES_PAYMENTS_REMIND": "10m,1m", "HITL_SCHEDULER_POLL_INTERVAL": "5s"})
    assert ok.policies["payments"].remind == (timedelta(minutes=10), timedelta(minutes=1))
    assert ok.scheduler.poll_interval == timedelta(seconds=5)
