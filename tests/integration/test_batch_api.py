"""`POST /v1/approvals/decisions`: an operator decides several approvals, each its own decision
with the answer a single decision gives; a malformed body is a 400 that changes nothing.
(Who may decide what is tests/security/test_batch.py.)"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.http.app import create_app
from gateway.http.keys import RUNTIME
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.testing import FakeClock
from tests.conftest import AUTH, OPERATOR
from tests.helpers import table_counts

URL = "/v1/approvals/decisions"


@pytest.fixture
async def api(
    aiohttp_client: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock
) -> AsyncIterator[TestClient[Any, Any]]:
    settings = settings_factory(
        workers={"agent": {"command": ["true"]}},
        policies={"pair": {"timeout": "1h", "quorum": 2}, "strict": {"timeout": "1h", "require_reason": True}},
    )
    rt = Runtime(settings, clock=clock, owner="test")
    yield await aiohttp_client(create_app(settings, runtime=rt, background=False))


def runtime(api: TestClient[Any, Any]) -> Runtime:
    rt: Runtime = api.server.app[RUNTIME]
    return rt


async def suspend(api: TestClient[Any, Any], step: str, **kw: Any) -> str:
    approval, _ = await runtime(api).service.suspend(SuspendRequest("run-1", step, f"Pay {step}", **kw))
    return approval.id


async def post(api: TestClient[Any, Any], body: Any, status: int = 200, headers: Any = OPERATOR) -> Any:
    resp = await api.post(URL, json=body, headers=headers)
    assert resp.status == status, await resp.text()
    return await resp.json()


async def test_each_item_is_its_own_decision_with_its_own_answer(api: TestClient[Any, Any]) -> None:
    one, two, pair, strict = [
        await suspend(api, s, policy=p) for s, p in (("a", None), ("b", None), ("c", "pair"), ("d", "strict"))
    ]
    items = [
        {"id": one, "outcome": "approve", "comment": "fine"},
        {"id": two, "outcome": "reject"},
        {"id": pair, "outcome": "approve"},  # quorum 2: a vote, still waiting
        {"id": strict, "outcome": "reject"},  # require_reason: refused, as alone
        {"id": "nosuchid", "outcome": "approve"},
        {"id": one, "outcome": "reject"},  # twice in one batch
        {"id": two, "outcome": "maybe"},  # a bad item: its own error
        {"outcome": "approve"},  # no id
    ]
    reply = await post(api, {"items": items})
    got = [(r["id"], r["ok"], r.get("status") or r["error"]["code"]) for r in reply["items"]]
    assert got == [
        (one, True, "approved"),
        (two, True, "rejected"),
        (pair, True, "waiting_approval"),
        (strict, False, "validation_error"),
        ("nosuchid", False, "not_found"),
        (one, False, "validation_error"),
        (two, False, "validation_error"),
        (None, False, "validation_error"),
    ]
    errors = [r["error"] for r in reply["items"] if not r["ok"]]
    assert errors[0]["details"]["field"] == "comment" and "requires a reason" in errors[0]["message"]
    assert "twice" in errors[2]["message"] and errors[3]["message"].startswith("outcome: must be")
    assert errors[4]["message"] == "id: is required"
    service = runtime(api).service
    decided = await service.get(one)
    assert decided.decision is not None
    assert (decided.decision.decided_by, decided.decision.channel, decided.decision.comment) == (
        "operator:test",
        "api",
        "fine",
    )
    assert (await service.get(strict)).status.value == "waiting_approval"
    # the same refusals as a single decision: the reason-less reject of `strict`, and `one` again
    single = await api.post(f"/v1/approvals/{strict}/decision", json={"outcome": "reject"}, headers=OPERATOR)
    assert single.status == 400 and (await single.json())["error"]["code"] == errors[0]["code"]
    again = await post(api, {"items": [{"id": one, "outcome": "reject"}]})
    single = await api.post(f"/v1/approvals/{one}/decision", json={"outcome": "reject"}, headers=OPERATOR)
    assert again["items"][0]["error"]["code"] == (await single.json())["error"]["code"] == "already_decided"


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({}, "items", "must be a list of objects"),
        ({"items": []}, "items", "at least one item"),
        ({"items": "abc"}, "items", "must be a list of objects"),
        ({"items": [{"id": "x", "outcome": "approve"}, 7]}, "items", "must be a list of objects"),
        ({"items": [{"id": "x", "outcome": "approve"}], "by": "web:bob"}, "by", "unknown field"),
        ({"items": [{"id": "x", "outcome": "approve"}] * 101}, "items", "at most 100 items per batch, got 101"),
    ],
)
async def test_a_malformed_body_is_a_400_that_decides_nothing(
    api: TestClient[Any, Any], body: Any, field: str, words: str
) -> None:
    first = await suspend(api, "a")
    if body.get("items") and isinstance(body["items"], list):
        body = {**body, "items": [{**i, "id": first} if isinstance(i, dict) else i for i in body["items"]]}
    before = await table_counts(runtime(api))
    reply = await post(api, body, 400)
    assert reply["error"]["code"] == "validation_error" and reply["error"]["details"]["field"] == field
    assert words in reply["error"]["message"], reply
    assert await table_counts(runtime(api)) == before


async def test_not_json_and_agent_keys_are_refused_whole(api: TestClient[Any, Any]) -> None:
    first = await suspend(api, "a")
    before = await table_counts(runtime(api))
    resp = await api.post(URL, data=b"[1, 2", headers={**OPERATOR, "Content-Type": "application/json"})
    assert resp.status == 400 and (await resp.json())["error"]["code"] == "invalid_json"
    agent = await post(api, {"items": [{"id": first, "outcome": "approve"}]}, 403, headers=AUTH)
    assert agent["error"]["code"] == "operator_required"
    assert (await api.post(URL, json={"items": []})).status == 401
    assert await table_counts(runtime(api)) == before


async def test_the_reply_matches_its_published_schema(api: TestClient[Any, Any]) -> None:
    spec = await (await api.get("/openapi.json")).json()
    op = spec["paths"][URL]["post"]
    reply_ref = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    schemas = spec["components"]["schemas"]
    reply = schemas[reply_ref.rsplit("/", 1)[1]]
    item = schemas["DecisionItem"]
    assert (
        set(item["properties"]) == {"id", "outcome", "comment", "args_hash"} and item["additionalProperties"] is False
    )
    assert schemas["BatchDecisionBody"]["properties"]["items"]["maxItems"] == 100
    first = await suspend(api, "a")
    got = await post(api, {"items": [{"id": first, "outcome": "approve"}, {"id": "zz", "outcome": "reject"}]})
    result = schemas[reply["properties"]["items"]["items"]["$ref"].rsplit("/", 1)[1]]
    for r in got["items"]:
        assert set(r) <= set(result["properties"]) and {"id", "ok"} <= set(r)
    assert got["items"][0] == {"id": first, "ok": True, "status": "approved"}
    assert set(got["items"][1]) == {"id", "ok", "error"} and got["items"][1]["error"]["code"] == "not_found"
