"""A delegation carries the delegator's rights and nothing more (issue item: delegation): the
requester never decides through one, a delegate cannot widen what the delegator may decide, an
ended, not yet started or revoked delegation gives no power, and a delegate and their delegator
are one person in a quorum. Against the real app and a SQLite file, with a FakeClock; the same
flows on PostgreSQL are tests/integration/test_delegations_api.py."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.core.clock import iso
from gateway.core.errors import NotAnApprover, RequesterCannotDecide
from gateway.core.models import Outcome, Status
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.service.commands import CastVote
from gateway.settings import Settings
from gateway.testing import FakeClock
from tests.conftest import AUTH, OPERATOR
from tests.helpers import table_counts as _counts
from tests.web.conftest import HASH

Client = TestClient[Any, Any]
WEB = {"approvers": ["alice", "bob", "carol", "dave"], "passwords": {n: HASH for n in ("alice", "bob", "carol")}}


@pytest.fixture
def settings(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory(web=WEB, policies={"two": {"timeout": "1h", "quorum": 2}})


@pytest.fixture
async def rt(settings: Settings, clock: FakeClock) -> Runtime:
    return Runtime(settings, clock=clock, owner="test")


@pytest.fixture
async def api(aiohttp_client: Callable[..., Any], settings: Settings, rt: Runtime) -> AsyncIterator[Client]:
    yield await aiohttp_client(create_app(settings, runtime=rt, background=False))


async def table_counts(rt: Runtime) -> dict[str, Any]:
    """Everything a refused request could change, delegations and their audit trail included."""
    every = await rt.store.list_delegations(rt.clock.now(), live=False, limit=1000)
    trail = {d.id: len(await rt.store.delegation_events(d.id)) for d in every}
    return {**await _counts(rt), "delegations": sorted((d.id, d.revoked_at) for d in every), "trail": trail}


async def suspend(rt: Runtime, run: str, **kw: Any) -> str:
    return (await rt.service.suspend(SuspendRequest(run, "charge", f"Charge {run}", **kw)))[0].id


async def delegate(api: Client, clock: FakeClock, delegator: str, to: str, hours: int = 8, **kw: Any) -> str:
    body = {"delegator": delegator, "delegate": to, "until": iso(clock.now() + timedelta(hours=hours)), **kw}
    resp = await api.post("/v1/delegations", json=body, headers=OPERATOR)
    assert resp.status == 201, await resp.text()
    return str((await resp.json())["id"])


async def test_the_requester_never_decides_through_a_delegation(api: Client, rt: Runtime, clock: FakeClock) -> None:
    svc = rt.service
    # bob requested it: alice's delegation to bob does not let him decide his own request
    mine = await suspend(rt, "run-1", requested_by="web:bob")
    await delegate(api, clock, "web:alice", "web:bob")
    with pytest.raises(RequesterCannotDecide):
        await svc.decide(mine, Outcome.APPROVE, "web:bob", channel="web")
    # nor does anyone decide for the requester: bob's delegation to carol is no right on bob's request
    await delegate(api, clock, "web:bob", "web:carol")
    named = await suspend(rt, "run-2", requested_by="web:bob", approvers=("web:bob", "web:alice"))
    with pytest.raises(NotAnApprover):
        await svc.decide(named, Outcome.APPROVE, "web:carol", channel="web")
    for aid in (mine, named):
        assert (await svc.get(aid)).votes == ()
    # and nobody can delegate to themselves (one person, the same party)
    until = iso(clock.now() + timedelta(hours=1))
    resp = await api.post(
        "/v1/delegations", json={"delegator": "web:bob", "delegate": "web:bob", "until": until}, headers=OPERATOR
    )
    assert resp.status == 400 and (await resp.json())["error"]["details"]["field"] == "delegate"


async def test_a_delegate_cannot_widen_what_the_delegator_may_decide(
    api: Client, rt: Runtime, clock: FakeClock
) -> None:
    svc = rt.service
    for_alice = await suspend(rt, "run-1", approvers=("web:alice",))
    for_carol = await suspend(rt, "run-2", approvers=("web:carol",))
    with pytest.raises(NotAnApprover):  # bob is an approver, but not of these
        await svc.decide(for_alice, Outcome.APPROVE, "web:bob", channel="web")
    await delegate(api, clock, "web:alice", "web:bob")
    await delegate(api, clock, "web:carol", "web:alice")  # not passed on to bob through alice
    # alice may not decide carol's: neither may bob through alice (nor through alice's own delegation)
    before = await table_counts(rt)
    with pytest.raises(NotAnApprover):
        await svc.decide(for_carol, Outcome.APPROVE, "web:bob", channel="web")
    assert await table_counts(rt) == before
    # an identity on no allowlist gives nothing by delegating: web:erin is no approver
    await delegate(api, clock, "web:erin", "web:dave")
    with pytest.raises(NotAnApprover):
        await svc.decide(for_carol, Outcome.APPROVE, "web:dave", channel="web")
    # what alice may decide, bob decides for her, on the record as such
    done = await svc.decide(for_alice, Outcome.APPROVE, "web:bob", channel="web")
    assert done.status is Status.APPROVED and done.decision is not None
    assert (done.decision.decided_by, done.decision.on_behalf_of) == ("web:bob", "web:alice")
    # the delegate's own rights are unchanged: carol's delegation to alice gave alice nothing here
    # beyond carol's rights, and bob still cannot decide carol's approval
    assert (await svc.get(for_carol)).status is Status.WAITING


@pytest.mark.parametrize("when", ["ended", "not_started", "revoked"])
async def test_an_inactive_delegation_gives_no_power(api: Client, rt: Runtime, clock: FakeClock, when: str) -> None:
    svc = rt.service
    aid = await suspend(rt, "run-1", approvers=("web:alice",))
    if when == "not_started":
        start = iso(clock.now() + timedelta(hours=1))
        await delegate(api, clock, "web:alice", "web:bob", hours=5, **{"from": start})
    else:
        did = await delegate(api, clock, "web:alice", "web:bob", hours=1)
        if when == "ended":
            clock.advance(3600)  # `until` is excluded
        else:
            resp = await api.delete(f"/v1/delegations/{did}", headers=OPERATOR)
            assert resp.status == 200 and (await resp.json())["revoked_by"] == "operator:test"
    before = await table_counts(rt)
    with pytest.raises(NotAnApprover):
        await svc.decide(aid, Outcome.APPROVE, "web:bob", channel="web")
    assert await table_counts(rt) == before
    assert (await svc.get(aid)).status is Status.WAITING


async def test_a_delegate_and_the_delegator_count_as_one_person(api: Client, rt: Runtime, clock: FakeClock) -> None:
    svc = rt.service
    await delegate(api, clock, "web:alice", "web:bob")
    # bob decides for alice where only she and carol may: his vote is alice's
    aid = await suspend(rt, "run-1", approvers=("web:alice", "web:carol"), policy="two")
    first = await svc.decide(aid, Outcome.APPROVE, "web:bob", channel="web")
    assert first.approvals_count == 1 and first.votes[0].on_behalf_of == "web:alice"
    again = await svc.decide(aid, Outcome.APPROVE, "web:alice", channel="web")  # alice herself: the same party
    assert again.approvals_count == 1 and again.status is Status.WAITING
    twice = await svc.decide(aid, Outcome.APPROVE, "web:bob", channel="web")
    assert twice.approvals_count == 1
    done = await svc.decide(aid, Outcome.APPROVE, "web:carol", channel="web")
    assert done.status is Status.APPROVED
    # bob, an approver himself, votes as himself first and then cannot vote again for alice
    other = await suspend(rt, "run-2", policy="two")
    mine = await svc.decide(other, Outcome.APPROVE, "web:bob", channel="web")
    assert mine.approvals_count == 1 and mine.votes[0].on_behalf_of is None
    assert (await svc.decide(other, Outcome.APPROVE, "web:bob", channel="web")).approvals_count == 1
    # and a delegate of two people who may not decide alone votes once, for the first
    await delegate(api, clock, "web:carol", "web:dave")
    named = await suspend(rt, "run-3", approvers=("web:alice", "web:carol"), policy="two")
    clock.advance(60)  # the older delegation is the one taken first
    await delegate(api, clock, "web:alice", "web:dave")
    one = await svc.decide(named, Outcome.APPROVE, "web:dave", channel="web")
    assert one.votes[0].on_behalf_of == "web:carol"
    assert (await svc.decide(named, Outcome.APPROVE, "web:dave", channel="web")).approvals_count == 1


async def test_one_human_approves_once_for_themselves_or_for_a_delegator(
    aiohttp_client: Callable[..., Any], settings_factory: Callable[..., Settings], clock: FakeClock
) -> None:
    """Bob approves for alice (he may not decide alone); an escalation then adds a group with bob:
    his own approval would be a second vote by the same human, so it is a duplicate."""
    escalating = {"timeout": "1h", "on_timeout": "escalate", "escalate_to": ["group:backup"], "quorum": 2}
    settings = settings_factory(
        web=WEB,
        groups={"backup": {"members": ["web:bob"]}},
        policies={"escalating": escalating | {"escalation_timeout": "1h"}},
    )
    rt = Runtime(settings, clock=clock, owner="test")
    api = await aiohttp_client(create_app(settings, runtime=rt, background=False))
    await delegate(api, clock, "web:alice", "web:bob", hours=4)
    aid = await suspend(rt, "run-1", approvers=("web:alice", "web:carol"), policy="escalating")
    first = await rt.service.decide(aid, Outcome.APPROVE, "web:bob", channel="web")
    assert first.approvals_count == 1 and first.votes[0].on_behalf_of == "web:alice"
    await rt.scheduler.tick(clock.advance(minutes=61))
    assert (await rt.service.get(aid)).approvers == ("web:alice", "web:carol", "group:backup")
    again = await rt.service.decide(aid, Outcome.APPROVE, "web:bob", channel="web")  # now as himself
    assert again.approvals_count == 1 and again.status is Status.WAITING
    assert (await rt.service.decide(aid, Outcome.APPROVE, "web:carol", channel="web")).status is Status.APPROVED


async def test_agents_cannot_create_list_or_revoke_delegations(api: Client, clock: FakeClock) -> None:
    did = await delegate(api, clock, "web:alice", "web:bob")
    until = iso(clock.now() + timedelta(hours=1))
    for method, path, body in (
        ("POST", "/v1/delegations", {"delegator": "web:alice", "delegate": "web:carol", "until": until}),
        ("GET", "/v1/delegations", None),
        ("GET", f"/v1/delegations/{did}", None),
        ("DELETE", f"/v1/delegations/{did}", None),
    ):
        resp = await api.request(method, path, json=body, headers=AUTH)
        assert resp.status == 403 and (await resp.json())["error"]["code"] == "operator_required", (method, path)
    items = (await (await api.get("/v1/delegations", headers=OPERATOR)).json())["items"]
    assert [(d["id"], d["revoked_at"]) for d in items] == [(did, None)]


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"until": None}, "until"),
        ({"until": "tomorrow"}, "until"),
        ({"from": "soon"}, "from"),
        ({"until": "-1h"}, "until"),  # in the past
        ({"from": "+2h", "until": "+1h"}, "until"),  # until <= from
        ({"until": "+2161h"}, "until"),  # longer than 90 days
        ({"from": "+8761h", "until": "+8762h"}, "from"),  # starts more than a year ahead
        ({"from": "9999-12-31T00:00:00Z", "until": "9999-12-31T23:59:00-01:00"}, "from"),  # year 10000 in UTC
        ({"delegate": "web:alice"}, "delegate"),
        ({"delegate": "nobody"}, "delegate"),
        ({"delegator": "web:"}, "delegator"),
        ({"delegator": None}, "delegator"),
        ({"on_behalf": "x"}, "on_behalf"),
    ],
)
async def test_a_bad_delegation_is_a_400_naming_the_field_and_nothing_changes(
    api: Client, rt: Runtime, clock: FakeClock, over: dict[str, Any], field: str
) -> None:
    def at(value: Any) -> Any:
        if isinstance(value, str) and value[0] in "+-":
            return iso(clock.now() + timedelta(hours=int(value[:-1])))
        return value

    body = {"delegator": "web:alice", "delegate": "web:bob", "until": "+1h"} | over
    body = {k: at(v) for k, v in body.items() if v is not None}
    before = await table_counts(rt)
    resp = await api.post("/v1/delegations", json=body, headers=OPERATOR)
    assert resp.status == 400, await resp.text()
    error = (await resp.json())["error"]
    assert error["details"]["field"] == field and field in error["message"], error
    assert await table_counts(rt) == before


async def test_a_revocation_that_commits_first_refuses_the_vote(api: Client, rt: Runtime, clock: FakeClock) -> None:
    """Authorized through a delegation, then revoked before the vote's transaction: the vote's
    transaction checks it again, and writes nothing."""
    aid = await suspend(rt, "run-1", approvers=("web:alice",))
    did = await delegate(api, clock, "web:alice", "web:bob")
    seen, via = await rt.service.get(aid), await rt.store.get_delegation(did)
    assert via is not None
    await rt.service.delegations.revoke(did, "operator:test", operator=True)
    before = await table_counts(rt)
    cmd = CastVote(aid, Outcome.APPROVE, "web:bob", channel="web")
    with pytest.raises(NotAnApprover, match="revoked or ended"):
        await rt.service.decisions.cast(cmd, current=seen, current_via=via)
    assert await table_counts(rt) == before


async def test_other_peoples_delegations_never_crowd_out_ones_own(api: Client, rt: Runtime, clock: FakeClock) -> None:
    """Five hundred older delegations among others do not hide the one to bob (each person's
    delegations are read by their own identities, not from a list of everyone's)."""
    from gateway.core.delegation import Delegation
    from gateway.service.delegations import new_delegation_id

    now, until = clock.now(), clock.now() + timedelta(hours=8)
    for n in range(500):
        await rt.store.create_delegation(
            Delegation(new_delegation_id(), f"web:x{n}", f"web:y{n}", now, until, "operator:test", now, None)
        )
    clock.advance(1)
    await delegate(api, clock, "web:alice", "web:bob")
    aid = await suspend(rt, "run-1", approvers=("web:alice",))
    done = await rt.service.decide(aid, Outcome.APPROVE, "web:bob", channel="web")
    assert done.status is Status.APPROVED and done.decision is not None
    assert done.decision.on_behalf_of == "web:alice"
