"""Every endpoint and every error path, over real HTTP on a real SQLite file.

Each error case asserts the clear 4xx AND that nothing changed in the store."""

from __future__ import annotations

import asyncio
import io
import json
from datetime import timedelta
from typing import Any

import pytest

from gateway.core.models import Outcome
from gateway.http.keys import RUNTIME
from gateway.service.commands import Authority
from tests.conftest import AUTH, OPERATOR, suspend_body
from tests.helpers import table_counts


def rt_of(client: Any) -> Any:
    return client.server.app[RUNTIME]


async def suspend(client: Any, **over: Any) -> dict[str, Any]:
    resp = await client.post("/v1/suspend", json=suspend_body(**over), headers=AUTH)
    assert resp.status == 201, await resp.text()
    return dict(await resp.json())


async def error_of(resp: Any, status: int) -> dict[str, Any]:
    assert resp.status == status, await resp.text()
    body = await resp.json()
    assert set(body["error"]) >= {"code", "message"}
    return dict(body["error"])


async def test_suspend_returns_token_and_deadline(client: Any) -> None:
    body = await suspend(client, policy="fast")
    assert body["status"] == "waiting_approval"
    assert body["deadline"] == "2030-01-01T12:01:00Z"
    assert set(body) == {"id", "status", "resume_token", "deadline"}


async def test_same_idempotency_key_returns_same_body_and_no_second_card(client: Any) -> None:
    first = await suspend(client)
    resp = await client.post("/v1/suspend", json=suspend_body(), headers=AUTH)
    assert resp.status == 200
    assert await resp.json() == first
    outbox = await rt_of(client).store.list_outbox(first["id"])
    assert [o.kind.value for o in outbox] == ["post"]
    # an explicit key reused for different args is a conflict, not a silent replay
    await suspend(client, idempotency_key="k-1", step="other")
    before = await table_counts(rt_of(client))
    resp = await client.post("/v1/suspend", json=suspend_body(idempotency_key="k-1", args={"x": 1}), headers=AUTH)
    assert (await error_of(resp, 409))["code"] == "idempotency_conflict"
    assert await table_counts(rt_of(client)) == before


async def test_get_list_and_events(client: Any) -> None:
    a = await suspend(client)
    await suspend(client, run_id="run-2")
    resp = await client.get(f"/v1/approvals/{a['id']}", headers=AUTH)
    view = await resp.json()
    assert view["status"] == "waiting_approval" and view["args"] == {"amount": 4200, "currency": "USD"}
    assert "state" not in view
    listed = await (await client.get("/v1/approvals?run_id=run-2", headers=AUTH)).json()
    assert [x["run_id"] for x in listed["items"]] == ["run-2"]
    waiting = await (await client.get("/v1/approvals?status=waiting_approval", headers=AUTH)).json()
    assert len(waiting["items"]) == 2
    events = await (await client.get(f"/v1/approvals/{a['id']}/events", headers=AUTH)).json()
    assert [e["kind"] for e in events["items"]] == ["suspended", "card_posted"]  # the web card: same commit


async def test_decision_then_already_decided(client: Any) -> None:
    a = await suspend(client)
    resp = await client.post(
        f"/v1/approvals/{a['id']}/decision",
        json={"outcome": "reject", "by": "web:ann", "comment": "too much"},
        headers=OPERATOR,
    )
    assert resp.status == 200
    view = await resp.json()
    assert view["status"] == "rejected" and view["decision"]["comment"] == "too much"
    # the operator decided, as itself; `by` is only whom it acted for
    assert view["decision"]["decided_by"] == "operator:test" and view["decision"]["on_behalf_of"] == "web:ann"
    assert view["decision"]["source"] == "operator"
    before = await table_counts(rt_of(client))
    resp = await client.post(
        f"/v1/approvals/{a['id']}/decision", json={"outcome": "approve", "by": "web:bob"}, headers=OPERATOR
    )
    err = await error_of(resp, 409)
    assert err["code"] == "already_decided" and "rejected by operator:test" in err["message"]
    assert await table_counts(rt_of(client)) == before


async def test_decision_queues_card_sync_and_resume_job(client: Any) -> None:
    a = await suspend(client, worker="agent")
    await client.post(f"/v1/approvals/{a['id']}/decision", json={"outcome": "approve"}, headers=OPERATOR)
    rt = rt_of(client)
    kinds = [o.kind.value for o in await rt.store.list_outbox(a["id"])]
    assert kinds == ["post", "sync"]
    job = await rt.store.get_job(a["id"])
    assert job is not None and job.worker == "agent" and job.status.value == "queued"
    await rt.outbox.drain()
    cards = await rt.store.list_cards(a["id"])
    assert [c.status.value for c in cards] == ["done"]


async def test_requester_cannot_decide(client: Any) -> None:
    a = await suspend(client, requested_by="operator:test")
    before = await table_counts(rt_of(client))
    resp = await client.post(f"/v1/approvals/{a['id']}/decision", json={"outcome": "approve"}, headers=OPERATOR)
    assert (await error_of(resp, 403))["code"] == "requester_cannot_decide"
    assert await table_counts(rt_of(client)) == before


async def test_named_approvers_are_enforced_for_api_decisions(
    settings_factory: Any, aiohttp_client: Any, clock: Any
) -> None:
    """Named approvers bind operators too: `by` naming one of them does not make the operator one."""
    from gateway.http.app import create_app
    from gateway.runtime import Runtime

    settings = settings_factory(web={"approvers": ["ann"]})
    runtime = Runtime(settings, clock=clock, owner="t")
    client = await aiohttp_client(create_app(settings, runtime=runtime, background=False))
    a = await suspend(client, approvers=["web:ann"])
    before = await table_counts(rt_of(client))
    resp = await client.post(
        f"/v1/approvals/{a['id']}/decision", json={"outcome": "approve", "by": "web:ann"}, headers=OPERATOR
    )
    assert (await error_of(resp, 403))["code"] == "not_an_approver"
    assert await table_counts(rt_of(client)) == before
    b = await suspend(client, run_id="run-2", approvers=["web:ann", "operator:test"])
    resp = await client.post(f"/v1/approvals/{b['id']}/decision", json={"outcome": "approve"}, headers=OPERATOR)
    assert resp.status == 200


async def test_cancel(client: Any) -> None:
    a = await suspend(client)
    resp = await client.post(
        f"/v1/approvals/{a['id']}/cancel", json={"by": "web:ann", "reason": "dup"}, headers=OPERATOR
    )
    view = await resp.json()
    assert view["status"] == "cancelled" and view["decision"]["source"] == "cancel"
    assert view["decision"]["decided_by"] == "operator:test" and view["decision"]["on_behalf_of"] == "web:ann"
    resp = await client.post(f"/v1/approvals/{a['id']}/cancel", headers=OPERATOR)
    assert (await error_of(resp, 409))["code"] == "already_decided"


async def test_rehydrate_and_decide_by_token(client: Any) -> None:
    a = await suspend(client)
    doc = await (await client.get(f"/v1/resume/{a['resume_token']}")).json()
    assert doc["state"] == {"cursor": 3} and doc["args"]["amount"] == 4200 and doc["decision"] is None
    resp = await client.post("/v1/resume", json={"token": a["resume_token"], "outcome": "approve", "comment": "ok"})
    assert resp.status == 200
    doc = await (await client.get(f"/v1/resume/{a['resume_token']}")).json()
    assert doc["decision"]["outcome"] == "approve" and doc["status"] == "approved"


async def test_tampered_and_expired_tokens_change_nothing(client: Any) -> None:
    a = await suspend(client, policy="fast")
    rt = rt_of(client)
    before = await table_counts(rt)
    token = a["resume_token"]
    tampered = token[:-3] + ("AAA" if not token.endswith("AAA") else "BBB")
    assert (await error_of(await client.get(f"/v1/resume/{tampered}"), 401))["code"] == "invalid_token"
    resp = await client.post("/v1/resume", json={"token": tampered, "outcome": "approve"})
    assert (await error_of(resp, 401))["code"] == "invalid_token"
    # expiry = deadline (1m) + grace (7d)
    rt.clock.advance(timedelta(days=7, minutes=1, seconds=1).total_seconds())
    assert (await error_of(await client.get(f"/v1/resume/{token}"), 410))["code"] == "token_expired"
    resp = await client.post("/v1/resume", json={"token": token, "outcome": "approve"})
    assert (await error_of(resp, 410))["code"] == "token_expired"
    assert await table_counts(rt) == before


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"step": "s", "title": "t"}, "validation_error", "run_id"),
        ({"run_id": "", "step": "s", "title": "t"}, "validation_error", "run_id"),
        ({"run_id": 5, "step": "s", "title": "t"}, "validation_error", "run_id"),
        ({"run_id": "r", "title": "t"}, "validation_error", "step"),
        ({"run_id": "r", "step": "s"}, "validation_error", "title"),
        ({"run_id": "r", "step": "s", "title": "t", "args": [1]}, "validation_error", "args"),
        ({"run_id": "r", "step": "s", "title": "t", "channels": "web"}, "validation_error", "channels"),
        ({"run_id": "r", "step": "s", "title": "t", "channels": []}, "validation_error", "channels"),
        ({"run_id": "r", "step": "s", "title": "t", "approvers": ["bob"]}, "validation_error", "approvers[0]"),
        ({"run_id": "r", "step": "s", "title": "t", "policy": {"quorum": 0}}, "validation_error", "policy.quorum"),
        ({"run_id": "r", "step": "s", "title": "t", "policy": 5}, "validation_error", "policy"),
        ({"run_id": "r", "step": "s", "title": "t", "colour": "red"}, "validation_error", "colour"),
        ({"run_id": "r", "step": "s", "title": "x" * 301}, "validation_error", "title"),
    ],
)
async def test_suspend_validation(client: Any, body: dict[str, Any], code: str, field: str) -> None:
    before = await table_counts(rt_of(client))
    err = await error_of(await client.post("/v1/suspend", json=body, headers=AUTH), 400)
    assert err["code"] == code and err["details"]["field"] == field
    assert field.split("[")[0].split(".")[0] in err["message"]
    assert await table_counts(rt_of(client)) == before


@pytest.mark.parametrize(
    ("over", "code", "name"),
    [
        ({"channels": ["telegram:123"]}, "unknown_channel", "telegram"),
        ({"channels": ["fax:1"]}, "unknown_channel", "fax"),
        ({"channels": ["web:extra"]}, "unknown_channel", "web"),
        ({"worker": "nope"}, "unknown_worker", "nope"),
        ({"policy": "nope"}, "unknown_policy", "nope"),
    ],
)
async def test_unknown_channel_worker_policy(client: Any, over: dict[str, Any], code: str, name: str) -> None:
    before = await table_counts(rt_of(client))
    resp = await client.post("/v1/suspend", json=suspend_body(**over), headers=AUTH)
    err = await error_of(resp, 400)
    assert err["code"] == code and name in err["message"]
    assert await table_counts(rt_of(client)) == before


async def test_bad_json_and_bodies(client: Any) -> None:
    before = await table_counts(rt_of(client))
    for raw in (b"{", b"", b"[1, 2]", b"\xff\xfe", b"null"):
        resp = await client.post("/v1/suspend", data=raw, headers={**AUTH, "Content-Type": "application/json"})
        assert (await error_of(resp, 400))["code"] == "invalid_json"
    resp = await client.post("/v1/suspend", data=b"<x/>", headers={**AUTH, "Content-Type": "application/xml"})
    assert (await error_of(resp, 415))["code"] == "unsupported_media_type"
    assert await table_counts(rt_of(client)) == before


async def test_oversized_body_is_413(client: Any) -> None:
    before = await table_counts(rt_of(client))
    big = json.dumps(suspend_body(state={"blob": "x" * (1024 * 1024 + 10)})).encode()
    resp = await client.post("/v1/suspend", data=io.BytesIO(big), headers={**AUTH, "Content-Type": "application/json"})
    assert (await error_of(resp, 413))["code"] == "payload_too_large"
    assert await table_counts(rt_of(client)) == before


async def test_a_413_names_the_configured_limit(client: Any) -> None:
    """The limit comes from our settings (aiohttp keeps its copy private)."""
    big = json.dumps(suspend_body(state={"blob": "x" * (1024 * 1024 + 10)})).encode()
    resp = await client.post("/v1/suspend", data=io.BytesIO(big), headers={**AUTH, "Content-Type": "application/json"})
    assert "1048576-byte limit" in (await error_of(resp, 413))["message"]


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong-key-0123456789"}, {"Authorization": "Basic abc"}, {"Authorization": "Bearer"}],
)
async def test_bad_auth(client: Any, headers: dict[str, str]) -> None:
    before = await table_counts(rt_of(client))
    resp = await client.post("/v1/suspend", json=suspend_body(), headers=headers)
    assert (await error_of(resp, 401))["code"] == "unauthorized"
    for path in ("/v1/approvals", "/v1/approvals/x", "/v1/approvals/x/events"):
        assert (await client.get(path, headers=headers)).status == 401
    assert await table_counts(rt_of(client)) == before


async def test_decision_and_list_validation(client: Any) -> None:
    a = await suspend(client)
    before = await table_counts(rt_of(client))
    url = f"/v1/approvals/{a['id']}/decision"
    for body, field in (
        ({"by": "web:x"}, "outcome"),
        ({"outcome": "yes", "by": "web:x"}, "outcome"),
        ({"outcome": "approve", "by": 5}, "by"),
        ({"outcome": "approve", "by": "web:x", "extra": 1}, "extra"),
    ):
        err = await error_of(await client.post(url, json=body, headers=OPERATOR), 400)
        assert err["details"]["field"] == field
    err = await error_of(await client.post("/v1/resume", json={"outcome": "approve"}), 400)
    assert err["details"]["field"] == "token"
    assert (await error_of(await client.get("/v1/approvals?status=maybe", headers=AUTH), 400))["code"] == (
        "validation_error"
    )
    assert (await error_of(await client.get("/v1/approvals?limit=0", headers=AUTH), 400))["code"] == (
        "validation_error"
    )
    assert await table_counts(rt_of(client)) == before


async def test_unknown_ids_and_routes(client: Any) -> None:
    assert (await error_of(await client.get("/v1/approvals/nope", headers=AUTH), 404))["code"] == "not_found"
    resp = await client.post("/v1/approvals/nope/decision", json={"outcome": "approve"}, headers=OPERATOR)
    assert (await error_of(resp, 404))["code"] == "not_found"
    assert (await error_of(await client.get("/nowhere"), 404))["code"] == "not_found"
    assert (await error_of(await client.delete("/v1/suspend", headers=AUTH), 405))["code"] == "method_not_allowed"


async def test_health_ready_and_request_id(client: Any) -> None:
    assert (await client.get("/healthz")).status == 200
    resp = await client.get("/readyz", headers={"X-Request-Id": "abc-123"})
    assert resp.status == 200 and resp.headers["X-Request-Id"] == "abc-123"
    resp = await client.get("/v1/approvals", headers=AUTH)
    assert len(resp.headers["X-Request-Id"]) == 16


_BASE = '{"run_id": "r", "step": "s", "title": "t", '


@pytest.mark.parametrize(
    ("path", "raw"),
    [
        ("/v1/suspend", _BASE + '"args": {"x": NaN}}'),
        ("/v1/suspend", _BASE + '"state": [Infinity, -Infinity]}'),
        ("/v1/suspend", _BASE + '"args": {"x": "\\ud800"}}'),
        ("/v1/suspend", _BASE + '"state": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        ("/v1/approvals/{id}/decision", '{"outcome": "reject", "by": "web:ann", "comment": "\\udfff"}'),
    ],
)
async def test_json_the_store_cannot_keep_is_400_not_500(client: Any, path: str, raw: str) -> None:
    """NaN/Infinity, unpaired surrogates and absurd nesting parse in Python but cannot be
    hashed, encoded or stored: a clear 400, and nothing changes."""
    a = await suspend(client)
    before = await table_counts(rt_of(client))
    resp = await client.post(
        path.format(id=a["id"]), data=raw.encode(), headers={**OPERATOR, "Content-Type": "application/json"}
    )
    assert (await error_of(resp, 400))["code"] == "invalid_json"
    assert await table_counts(rt_of(client)) == before


async def test_a_timeout_too_long_for_a_deadline_is_400(client: Any) -> None:
    before = await table_counts(rt_of(client))
    for policy in (
        {"timeout": "99999999d"},
        {"on_timeout": "escalate", "escalate_to": ["web"], "escalation_timeout": "9" * 30 + "s"},
    ):
        resp = await client.post("/v1/suspend", json=suspend_body(policy=policy), headers=AUTH)
        err = await error_of(resp, 400)
        assert err["code"] == "validation_error" and err["details"]["field"].startswith("policy.")
    assert await table_counts(rt_of(client)) == before


async def _raw_status(client: Any, request: bytes) -> int:
    """Send bytes no well-behaved client would (e.g. a header that is not UTF-8)."""
    reader, writer = await asyncio.open_connection(client.host, client.port)
    writer.write(request)
    await writer.drain()
    status_line = await reader.readline()
    writer.close()
    return int(status_line.split()[1])


async def test_a_non_utf8_api_key_is_401_not_500(client: Any) -> None:
    request = b"GET /v1/approvals HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xff\xfe\r\nConnection: close\r\n\r\n"
    assert await _raw_status(client, request) == 401


async def test_token_decisions_are_off_by_default(settings_factory: Any, aiohttp_client: Any, clock: Any) -> None:
    """The agent holds its resume token: by default it can rehydrate with it, not approve with it."""
    from gateway.config import load_settings
    from gateway.http.app import create_app
    from gateway.runtime import Runtime
    from gateway.testing import TEST_SECRET

    assert load_settings(None, env={"HITL_SECURITY_SECRET_KEYS": TEST_SECRET}).security.token_decisions is False
    settings = settings_factory(security={"token_decisions": False})
    rt = Runtime(settings, clock=clock, owner="t")
    client = await aiohttp_client(create_app(settings, runtime=rt, background=False))
    a = await suspend(client)
    assert (await client.get(f"/v1/resume/{a['resume_token']}")).status == 200
    before = await table_counts(rt)
    resp = await client.post("/v1/resume", json={"token": a["resume_token"], "outcome": "approve"})
    err = await error_of(resp, 403)
    assert "security.token_decisions" in err["message"]
    assert await table_counts(rt) == before


async def test_operator_keys_split_agents_from_deciders(settings_factory: Any, aiohttp_client: Any, clock: Any) -> None:
    """An agent's key can suspend and read but never decide; `operator_keys` (each key its own
    principal) still decide, as themselves."""
    from gateway.core.principals import derived_name
    from gateway.http.app import create_app
    from gateway.runtime import Runtime

    operator = {"Authorization": "Bearer operator-key-0123456789"}
    settings = settings_factory(security={"operator_keys": ["operator-key-0123456789"], "operators": {}})
    rt = Runtime(settings, clock=clock, owner="t")
    client = await aiohttp_client(create_app(settings, runtime=rt, background=False))
    a = await suspend(client)
    assert (await client.get(f"/v1/approvals/{a['id']}", headers=AUTH)).status == 200
    before = await table_counts(rt)
    for action, body in (
        ("decision", {"outcome": "approve", "by": "telegram:111"}),
        ("cancel", {}),
        ("retry", {}),
        ("cards/resend", {"channel": "web"}),
        ("events/resend", {}),
    ):
        resp = await client.post(f"/v1/approvals/{a['id']}/{action}", json=body, headers=AUTH)
        err = await error_of(resp, 403)
        assert err["code"] == "operator_required" and "security.operators" in err["message"]
    assert await table_counts(rt) == before
    resp = await client.post(
        f"/v1/approvals/{a['id']}/decision", json={"outcome": "approve", "by": "web:ann"}, headers=operator
    )
    assert resp.status == 200
    assert (await resp.json())["decision"]["decided_by"] == f"operator:{derived_name('operator-key-0123456789')}"
    assert (await client.get("/v1/approvals", headers=operator)).status == 200


async def test_a_replay_after_the_decision_reports_the_current_status(client: Any) -> None:
    """First hour #7: the same suspend again, once decided, must not say `waiting_approval`
    (an agent re-running after a crash would wait forever). The id stays; the token is the same
    while the approval waits, and once decided a fresh one that opens its document (the first
    one's 30 days may be over when a restarted agent learns the decision)."""
    first = await suspend(client)
    again = await (await client.post("/v1/suspend", json=suspend_body(), headers=AUTH)).json()
    assert (again["id"], again["resume_token"]) == (first["id"], first["resume_token"])
    await rt_of(client).service.decide(first["id"], Outcome.APPROVE, "web:ann", authority=Authority.OPERATOR)
    resp = await client.post("/v1/suspend", json=suspend_body(), headers=AUTH)
    assert resp.status == 200
    replay = await resp.json()
    assert replay["status"] == "approved" and replay["id"] == first["id"]
    doc = await (await client.get(f"/v1/resume/{replay['resume_token']}")).json()
    assert doc["decision"]["outcome"] == "approve"


async def test_suspend_reads_the_trace_headers_only_when_sent(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The headers' context when the body has none; no copy of the request when there is none."""
    from gateway.http import api

    copies: list[Any] = []
    real = api.replace
    monkeypatch.setattr(api, "replace", lambda *a, **kw: copies.append(kw) or real(*a, **kw))
    plain = await suspend(client, run_id="no-trace")
    assert copies == [] and (await rt_of(client).store.get_approval(plain["id"])).trace is None
    tid, sid = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    headers = AUTH | {"traceparent": f"00-{tid}-{sid}-01", "tracestate": "rojo=1"}
    resp = await client.post("/v1/suspend", json=suspend_body(run_id="traced"), headers=headers)
    assert resp.status == 201, await resp.text()
    trace = (await rt_of(client).store.get_approval((await resp.json())["id"])).trace
    assert trace is not None and (trace.trace_id, trace.span_id, trace.tracestate) == (tid, sid, "rojo=1")
    assert len(copies) == 1
