"""Approve with changes, extend and require_reason over the real API (real HTTP, real SQLite)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.core.keys import args_hash, idempotency_key
from gateway.http.app import create_app
from gateway.http.keys import RUNTIME
from gateway.runtime import Runtime
from gateway.testing import FakeClock
from tests.conftest import AUTH, OPERATOR, suspend_body
from tests.helpers import table_counts

pytestmark = pytest.mark.subprocess  # every test here starts a process

SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "integer", "minimum": 1, "maximum": 5000}, "email": {"type": "string"}},
    "required": ["amount"],
}
ARGS = {"amount": 4200, "currency": "USD", "email": "bill@acme.test"}


@pytest.fixture
async def api(
    aiohttp_client: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock
) -> AsyncIterator[TestClient[Any, Any]]:
    settings = settings_factory(
        workers={"agent": {"command": ["true"]}},
        policies={
            "pay": {"timeout": "1h", "extend": ["1h", "1d"], "max_extensions": 1, "quorum": 2},
            "strict": {"timeout": "1h", "require_reason": True},
            "roomy": {"timeout": "1h", "extend": ["1h"], "max_extensions": 5},
        },
        web={"approvers": ["alice", "bob"]},
    )
    rt = Runtime(settings, clock=clock, owner="test")
    yield await aiohttp_client(create_app(settings, runtime=rt, background=False))


async def suspend(client: Any, **over: Any) -> dict[str, Any]:
    body = suspend_body(args=ARGS, args_schema=SCHEMA, editable=["amount"], worker="agent", **over)
    resp = await client.post("/v1/suspend", json=body, headers=AUTH)
    assert resp.status == 201, await resp.text()
    return dict(await resp.json())


async def decide(client: Any, approval_id: str, status: int = 200, **body: Any) -> dict[str, Any]:
    resp = await client.post(f"/v1/approvals/{approval_id}/decision", json=body, headers=OPERATOR)
    assert resp.status == status, await resp.text()
    return dict(await resp.json())


async def test_suspend_checks_the_args_against_the_schema(api: Any) -> None:
    before = await table_counts(api.server.app[RUNTIME])
    body = suspend_body(args={"amount": 9000}, args_schema=SCHEMA)
    resp = await api.post("/v1/suspend", json=body, headers=AUTH)
    assert resp.status == 400
    err = (await resp.json())["error"]
    assert err["details"]["field"] == "args.amount" and "maximum of 5000" in err["message"]
    resp = await api.post("/v1/suspend", json=suspend_body(args_schema={"type": 3}), headers=AUTH)
    assert resp.status == 400 and "args_schema" in (await resp.json())["error"]["message"]
    resp = await api.post("/v1/suspend", json=suspend_body(editable="amount"), headers=AUTH)
    assert resp.status == 400 and (await resp.json())["error"]["details"]["field"] == "editable"
    assert await table_counts(api.server.app[RUNTIME]) == before


async def test_an_edit_is_checked_recorded_and_what_runs(api: Any) -> None:
    rt: Runtime = api.server.app[RUNTIME]
    a = await suspend(api)
    before = await table_counts(rt)
    bad = await decide(api, a["id"], 400, outcome="approve", args={**ARGS, "amount": 9000})
    assert bad["error"]["details"]["field"] == "args.amount"
    bad = await decide(api, a["id"], 400, outcome="approve", args={**ARGS, "currency": "EUR"})
    assert bad["error"]["details"]["field"] == "args.currency" and "not editable" in bad["error"]["message"]
    bad = await decide(api, a["id"], 400, outcome="reject", args={**ARGS, "amount": 1}, comment="x")
    assert bad["error"]["details"]["field"] == "args"
    assert await table_counts(rt) == before
    # the approver saw the redacted e-mail and sent it back untouched: the raw one is kept
    shown = (await (await api.get(f"/v1/approvals/{a['id']}", headers=AUTH)).json())["args"]
    assert shown["email"] == "[redacted:email]"
    view = await decide(api, a["id"], outcome="approve", args={**shown, "amount": 3900})
    assert view["status"] == "approved"
    d = view["decision"]
    assert d["args"]["amount"] == 3900 and d["original_args"]["amount"] == 4200
    assert d["patch"] == [{"op": "replace", "path": "/amount", "value": 3900}]
    events = (await (await api.get(f"/v1/approvals/{a['id']}/events", headers=AUTH)).json())["items"]
    approved = next(e for e in events if e["kind"] == "approved")
    assert approved["data"]["patch"] == d["patch"] and approved["data"]["changes"] == "amount 4200 → 3900"
    # the worker's document: the approved args, raw, the original and the patch; tokens bind them
    approval = await rt.service.get(a["id"])
    opened = []
    real_open = rt.service.sealer.open
    rt.service.sealer.open = lambda sealed: opened.append(sealed) or real_open(sealed)  # type: ignore[method-assign]
    doc = rt.service.resumes.rehydration_document(approval)
    del rt.service.sealer.open
    assert len(opened) == 1  # each opening decrypts: a launch's document opens the sealed copy once (was 3)
    approved_args = {**ARGS, "amount": 3900}
    assert doc["args"] == approved_args and doc["original_args"] == ARGS
    assert doc["decision"]["args"] == approved_args and doc["decision"]["original_args"] == ARGS
    assert doc["patch"] == d["patch"] and doc["args_hash"] == args_hash(approved_args)
    token = rt.service.resumes.worker_token(approval)
    assert (await rt.service.resumes.rehydrate(token))["args"] == approved_args
    assert (await rt.service.resumes.rehydrate(a["resume_token"]))["args"] == approved_args  # the suspend's token too
    # the effect's key, as the docs say: run.idempotency_key(step, decision.args)
    assert idempotency_key("run-1", "pay", doc["decision"]["args"]) != idempotency_key("run-1", "pay", ARGS)


async def test_an_edit_starts_a_new_round_of_votes(api: Any) -> None:
    rt: Runtime = api.server.app[RUNTIME]
    a = await suspend(api, policy="pay")
    await rt.service.decide(a["id"], _approve(), "web:bob", channel="web")
    after = await rt.service.decide(a["id"], _approve(), "web:alice", channel="web", args={**ARGS, "amount": 3900})
    assert after.status.value == "waiting_approval" and after.approvals_count == 1
    assert after.proposal is not None and after.proposal.args["amount"] == 3900
    kinds = [e.kind for e in await rt.store.list_events(a["id"])]
    assert kinds[-1] == "edited"
    syncs = [o for o in await rt.store.list_outbox(a["id"]) if o.kind.value == "sync"]
    assert syncs  # every card shows the change (pending syncs of one card are one row)
    asks = [o for o in await rt.store.list_outbox(a["id"]) if o.kind.value == "remind"]
    assert [(o.channel, o.data["edited"]) for o in asks] == [("web", 1)]  # bob is asked again
    done = await rt.service.decide(a["id"], _approve(), "web:bob", channel="web")
    assert done.status.value == "approved" and done.decision is not None and done.decision.args is not None
    assert rt.service.resumes.rehydration_document(done)["args"]["amount"] == 3900


async def test_extend_and_its_limits(api: Any, clock: FakeClock) -> None:
    rt: Runtime = api.server.app[RUNTIME]
    a = await suspend(api, policy="pay")
    url = f"/v1/approvals/{a['id']}/extend"
    resp = await api.post(url, json={"duration": "2h"}, headers=OPERATOR)
    assert resp.status == 403 and "policy 'pay' allows extensions of 1h, 1d" in (await resp.json())["error"]["message"]
    resp = await api.post(url, json={"duration": "1h", "by": "web:bob"}, headers=AUTH)
    assert resp.status == 403  # agents do not extend
    resp = await api.post(url, json={"duration": "1h"}, headers=OPERATOR)
    assert resp.status == 200, await resp.text()
    view = await resp.json()
    assert view["deadline"] == "2030-01-01T14:00:00Z" and view["extensions"] == 1
    before = await table_counts(rt)
    resp = await api.post(url, json={"duration": "1h"}, headers=OPERATOR)
    assert resp.status == 403 and "at most 1 extension" in (await resp.json())["error"]["message"]
    assert await table_counts(rt) == before
    # the scheduler fires at the new deadline, not the old one
    clock.advance(hours=1, minutes=30)
    await rt.scheduler.tick(clock.now())
    assert (await rt.service.get(a["id"])).status.value == "waiting_approval"
    clock.advance(minutes=31)
    await rt.scheduler.tick(clock.now())
    assert (await rt.service.get(a["id"])).status.value == "timed_out"


async def test_an_extend_sent_again_with_the_extensions_seen_extends_once(api: Any) -> None:
    """A client that lost the answer sends the same request again: with `extensions` (what it
    saw) the second extends nothing and says why; the policy would have allowed it."""
    rt: Runtime = api.server.app[RUNTIME]
    a = await suspend(api, policy="roomy")
    url, body = f"/v1/approvals/{a['id']}/extend", {"duration": "1h", "extensions": 0}
    resp = await api.post(url, json=body, headers=OPERATOR)
    assert resp.status == 200 and (await resp.json())["extensions"] == 1
    before = await table_counts(rt)
    again = await api.post(url, json=body, headers=OPERATOR)
    error = (await again.json())["error"]
    assert again.status == 409 and error["code"] == "extended_meanwhile" and error["details"]["field"] == "extensions"
    assert await table_counts(rt) == before
    for bad in (-1, "1", 1.5, True):
        refused = await api.post(url, json={"duration": "1h", "extensions": bad}, headers=OPERATOR)
        assert refused.status == 400 and "extensions" in (await refused.json())["error"]["message"], bad
    assert await table_counts(rt) == before
    resp = await api.post(url, json={"duration": "1h", "extensions": 1}, headers=OPERATOR)
    assert resp.status == 200 and (await resp.json())["extensions"] == 2
    resp = await api.post(url, json={"duration": "1h"}, headers=OPERATOR)  # without it: as before
    assert resp.status == 200 and (await resp.json())["extensions"] == 3


async def test_require_reason_applies_to_api_decisions(api: Any) -> None:
    a = await suspend(api, policy="strict")
    err = await decide(api, a["id"], 400, outcome="reject")
    assert (
        err["error"]["details"]["field"] == "comment" and "policy 'strict' requires a reason" in err["error"]["message"]
    )
    assert (await decide(api, a["id"], outcome="reject", comment="wrong customer"))["status"] == "rejected"
    b = await suspend(api, run_id="run-2")  # the default policy: a reject needs no reason
    assert (await decide(api, b["id"], outcome="reject"))["status"] == "rejected"


def _approve() -> Any:
    from gateway.core.models import Outcome

    return Outcome.APPROVE
