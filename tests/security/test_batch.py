"""A batch decision never decides an item its decider may not decide alone.

`POST /v1/approvals/decisions` (an operator's key) and the web inbox's "Approve selected" (a
signed-in approver) run each item through the one decision use case: the requester's own item,
an approval whose approvers leave the decider out, a stale round (`args_hash`, or the round
tag a row was drawn with), another approval's round and an approval decided already are each
refused with the code a single decision gets, store nothing, and do not stop the rest of the
batch. On SQLite and on PostgreSQL (`store_url`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.core import rounds
from gateway.core.keys import args_hash
from gateway.core.models import Outcome
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.settings import Settings
from gateway.testing import FakeClock
from tests.conftest import OPERATOR
from tests.web.conftest import WEB, csrf_of, sign_in

ARGS = {"amount": 4200, "to": "ACME"}
EDITED = {"amount": 3900, "to": "ACME"}


@pytest.fixture
def db_url(store_url: str) -> str:
    return store_url


@pytest.fixture
async def gw(
    aiohttp_client: Callable[..., Any], settings_factory: Callable[..., Settings], clock: FakeClock
) -> AsyncIterator[tuple[TestClient[Any, Any], Runtime]]:
    settings = settings_factory(
        web=WEB,
        workers={"agent": {"command": ["true"]}},
        policies={"pair": {"timeout": "1h", "quorum": 2}},
    )
    rt = Runtime(settings, clock=clock, owner="test")
    yield await aiohttp_client(create_app(settings, runtime=rt, background=False)), rt


async def _suspend(rt: Runtime, step: str, **kw: Any) -> str:
    req = SuspendRequest("run-1", step, f"Pay {step}", args=dict(ARGS), editable=["amount"], **kw)
    return (await rt.service.suspend(req))[0].id


async def _setup(rt: Runtime, me: str) -> dict[str, str]:
    """One approval of each kind the decider `me` may not decide, and one it may."""
    ids = {
        "own": await _suspend(rt, "own", requested_by=me),
        "not_listed": await _suspend(rt, "not-listed", approvers=("web:bob",)),
        "stale": await _suspend(rt, "stale", policy="pair"),
        "decided": await _suspend(rt, "decided"),
        "other_round": await _suspend(rt, "other-round"),
        "fine": await _suspend(rt, "fine"),
    }
    # bob approves `stale` with changes (a new round) and decides `decided`
    await rt.service.decide(ids["stale"], Outcome.APPROVE, "web:bob", channel="web", args=EDITED)
    await rt.service.decide(ids["decided"], Outcome.REJECT, "web:bob", channel="web")
    return ids


EXPECTED = {
    "own": "requester_cannot_decide",
    "not_listed": "not_an_approver",
    "stale": "stale_round",
    "decided": "already_decided",
    "other_round": "stale_round",
}


async def _snapshot(rt: Runtime, ids: dict[str, str]) -> dict[str, Any]:
    out = {}
    for name, aid in ids.items():
        a = await rt.service.get(aid)
        out[name] = (a.status, a.version, len(a.votes), len(await rt.store.list_events(aid)))
    return out


async def test_an_operator_batch_decides_nothing_the_operator_may_not_decide_alone(
    gw: tuple[TestClient[Any, Any], Runtime],
) -> None:
    api, rt = gw
    ids = await _setup(rt, "operator:test")
    stale_hash = args_hash(ARGS)  # what the caller read before bob's edit
    items = [
        {"id": ids["own"], "outcome": "approve"},
        {"id": ids["not_listed"], "outcome": "approve"},
        {"id": ids["stale"], "outcome": "approve", "args_hash": stale_hash},
        {"id": ids["decided"], "outcome": "approve"},
        {"id": ids["other_round"], "outcome": "approve", "args_hash": args_hash(EDITED)},  # another round's hash
        {"id": ids["fine"], "outcome": "approve", "args_hash": args_hash(ARGS)},
    ]
    refused = {k: v for k, v in ids.items() if k != "fine"}
    before = await _snapshot(rt, refused)
    resp = await api.post("/v1/approvals/decisions", json={"items": items}, headers=OPERATOR)
    assert resp.status == 200, await resp.text()
    results = (await resp.json())["items"]
    by_name = {name: results[i] for i, name in enumerate(ids)}
    assert {n: r["error"]["code"] for n, r in by_name.items() if n != "fine"} == EXPECTED
    assert by_name["fine"] == {"id": ids["fine"], "ok": True, "status": "approved"}
    assert await _snapshot(rt, refused) == before  # no vote, no event, no version
    # alone, each is refused with the same code
    for i, (name, code) in enumerate(EXPECTED.items()):
        body = {k: v for k, v in items[i].items() if k != "id"}
        single = await api.post(f"/v1/approvals/{ids[name]}/decision", json=body, headers=OPERATOR)
        assert (await single.json())["error"]["code"] == code, name
    assert await _snapshot(rt, refused) == before


async def test_a_web_batch_decides_nothing_the_person_may_not_decide_alone(
    gw: tuple[TestClient[Any, Any], Runtime],
) -> None:
    web, rt = gw
    ids = await _setup(rt, "web:alice")
    await sign_in(web)
    html = await (await web.get("/", params={"status": "all"})).text()
    signer = rt.signer
    # the round each row would have been drawn with before bob's edit; another approval's tag
    tags = {n: rounds.tag_of(signer, aid, args_hash(ARGS)) for n, aid in ids.items()}
    tags["other_round"] = rounds.tag(signer, await rt.service.get(ids["fine"]))
    form = {"csrf": csrf_of(html), "outcome": "approve", **{f"pick:{ids[n]}": tags[n] for n in ids}}
    refused = {k: v for k, v in ids.items() if k != "fine"}
    before = await _snapshot(rt, refused)
    resp = await web.post("/", data=form)
    assert resp.status == 200
    page = await resp.text()
    assert "Approved: 1 of 6" in page
    assert (await rt.service.get(ids["fine"])).status.value == "approved"
    assert await _snapshot(rt, refused) == before
    for name in ("own", "not_listed", "stale", "decided", "other_round"):
        assert f'<li class="error"><a href="/approvals/{ids[name]}">' in page, name
    # alone, on the approval page's form, each is refused too
    for name, code in EXPECTED.items():
        with_round = {"csrf": csrf_of(html), "outcome": "approve", "round": tags[name]}
        single = await web.post(f"/approvals/{ids[name]}/decision", data=with_round, allow_redirects=False)
        assert single.status in (403, 409), (name, code, single.status)
    assert await _snapshot(rt, refused) == before


async def test_a_reject_in_a_batch_is_refused_where_a_reject_alone_is(
    gw: tuple[TestClient[Any, Any], Runtime],
) -> None:
    """A reject is a veto on any round, but never by the requester, an unlisted person, or twice."""
    api, rt = gw
    ids = await _setup(rt, "operator:test")
    refused = {k: ids[k] for k in ("own", "not_listed", "decided")}
    before = await _snapshot(rt, refused)
    items = [{"id": ids[k], "outcome": "reject", "comment": "no"} for k in (*refused, "stale")]
    results = (await (await api.post("/v1/approvals/decisions", json={"items": items}, headers=OPERATOR)).json())[
        "items"
    ]
    assert [r.get("status") or r["error"]["code"] for r in results] == [
        "requester_cannot_decide",
        "not_an_approver",
        "already_decided",
        "rejected",  # the stale round's veto stands, as alone
    ]
    assert await _snapshot(rt, refused) == before
