"""Groups (`[groups.NAME] members`, approvers `group:NAME`): the operator says who is in a
group, an agent can only name it.

- An agent naming `group:NAME` narrows the web allowlist to the group's members; a group it
  invents, or one it tries to fill (a `groups` table, a member list in place of a name), is a
  400 naming the field, and nothing is stored.
- An empty group lets nobody decide; a group names nobody outside it.
- Quorum counts people: alice in two groups counts once, and [people] joins identities.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.core.errors import ConfigError, NotAnApprover, RequesterCannotDecide
from gateway.core.models import Outcome, Status
from gateway.http.app import create_app
from gateway.http.keys import RUNTIME
from gateway.runtime import Runtime
from gateway.testing import FakeClock
from tests.conftest import AUTH, suspend_body
from tests.helpers import table_counts

GROUPS = {
    "finance": {"members": ["web:alice", "dave"]},  # dave: a person, by name
    "ops": {"members": ["web:alice", "web:bob"]},
    "nobody": {"members": []},
}
SECTIONS: dict[str, Any] = {
    "web": {"approvers": ["alice", "bob", "carol", "dave"]},
    "people": {"dave": {"web": "dave"}},
    "groups": GROUPS,
    "policies": {"pair": {"timeout": "1h", "quorum": 2}},
}


@pytest.fixture
async def api(
    aiohttp_client: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock
) -> AsyncIterator[TestClient[Any, Any]]:
    settings = settings_factory(**SECTIONS)
    rt = Runtime(settings, clock=clock, owner="test")
    yield await aiohttp_client(create_app(settings, runtime=rt, background=False))


def _rt(client: TestClient[Any, Any]) -> Runtime:
    return client.server.app[RUNTIME]


async def _suspend(client: TestClient[Any, Any], **over: Any) -> Any:
    return await client.post("/v1/suspend", json=suspend_body(**over), headers=AUTH)


async def _refused(client: TestClient[Any, Any], field: str, **over: Any) -> str:
    before = await table_counts(_rt(client))
    resp = await _suspend(client, **over)
    assert resp.status == 400, await resp.text()
    message = (await resp.json())["error"]["message"]
    assert field in message
    assert await table_counts(_rt(client)) == before
    return str(message)


async def test_a_group_narrows_the_approvers_to_its_members(api: TestClient[Any, Any]) -> None:
    resp = await _suspend(api, approvers=["group:finance"])
    assert resp.status == 201, await resp.text()
    approval_id = (await resp.json())["id"]
    service = _rt(api).service
    for outsider in ("web:bob", "web:carol"):  # on the web allowlist, not in the group
        with pytest.raises(NotAnApprover):
            await service.decide(approval_id, Outcome.APPROVE, outsider, channel="web")
    decided = await service.decide(approval_id, Outcome.APPROVE, "web:dave", channel="web")  # via [people.dave]
    assert decided.status is Status.APPROVED and decided.approvers == ("group:finance",)


async def test_an_agent_cannot_invent_or_fill_a_group(api: TestClient[Any, Any]) -> None:
    message = await _refused(api, "approvers[0]", approvers=["group:friends"])
    assert "not a configured group" in message
    await _refused(api, "approvers", approvers=[{"group:friends": ["web:carol"]}])
    await _refused(api, "approvers[1]", approvers=["group:ops", "group:Ops "])
    # a body cannot bring a group's members along with it
    before = await table_counts(_rt(api))
    body = suspend_body(approvers=["group:nobody"], groups={"nobody": {"members": ["web:carol"]}})
    resp = await api.post("/v1/suspend", json=body, headers=AUTH)
    assert resp.status == 400 and "groups" in (await resp.json())["error"]["message"]
    assert await table_counts(_rt(api)) == before


async def test_an_empty_group_lets_nobody_decide(api: TestClient[Any, Any]) -> None:
    await _refused(api, "approvers", approvers=["group:nobody"])


async def test_the_requester_in_a_group_still_cannot_decide(api: TestClient[Any, Any]) -> None:
    resp = await _suspend(api, approvers=["group:ops"], requested_by="web:bob")
    assert resp.status == 201, await resp.text()
    with pytest.raises(RequesterCannotDecide):
        await _rt(api).service.decide((await resp.json())["id"], Outcome.APPROVE, "web:bob", channel="web")


async def test_quorum_counts_people_not_groups(api: TestClient[Any, Any]) -> None:
    resp = await _suspend(api, approvers=["group:finance", "group:ops"], policy="pair")
    assert resp.status == 201, await resp.text()
    approval_id, service = (await resp.json())["id"], _rt(api).service
    once = await service.decide(approval_id, Outcome.APPROVE, "web:alice", channel="web")  # in both groups
    assert once.status is Status.WAITING
    again = await service.decide(approval_id, Outcome.APPROVE, "web:alice", channel="web")
    assert again.status is Status.WAITING  # the same person twice counts once
    done = await service.decide(approval_id, Outcome.APPROVE, "web:bob", channel="web")
    assert done.status is Status.APPROVED


async def test_a_quorum_no_group_can_reach_is_refused(api: TestClient[Any, Any]) -> None:
    await _refused(api, "approvers", approvers=["group:finance"], policy="pair", requested_by="web:alice")


@pytest.mark.parametrize(
    ("sections", "key"),
    [
        ({"groups": {"g": {"members": ["zoe"]}}}, "groups.g.members[0]"),  # no such person
        ({"groups": {"g": {"members": ["Web:alice"]}}}, "groups.g.members[0]"),
        ({"groups": {"g": {"members": ["web:alice"], "admins": []}}}, "groups.g.admins"),
        ({"web": {"approvers": ["group:nope"]}}, "web.approvers[0]"),
        ({"rule": [{"name": "r", "when": "true", "then": "ask", "approvers": ["group:nope"]}]}, "rule.r.approvers[0]"),
        (
            {"policies": {"p": {"timeout": "1h", "on_timeout": "escalate", "escalate_to": ["group:x"]}}},
            "policies.p.escalate_to[0]",
        ),
    ],
)
def test_a_config_naming_an_unknown_group_or_member_stops(
    settings_factory: Callable[..., Any], sections: dict[str, Any], key: str
) -> None:
    with pytest.raises(ConfigError) as exc:
        settings_factory(**sections)
    assert exc.value.key == key


def test_a_web_approver_may_come_through_a_group(settings_factory: Callable[..., Any]) -> None:
    settings = settings_factory(web={"approvers": ["group:ops"]}, groups={"ops": {"members": ["web:bob"]}})
    ids = settings.identities
    assert settings.web.role("bob", lambda g: ids.in_group(g, "web:bob")) == "approver"
    assert settings.web.role("carol", lambda g: ids.in_group(g, "web:carol")) is None


async def test_a_rule_routes_to_a_group(
    aiohttp_client: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock
) -> None:
    rule = {"name": "big", "when": "args.amount > 1000", "then": "ask", "approvers": ["group:finance"]}
    settings = settings_factory(**SECTIONS, rule=[rule])
    client = await aiohttp_client(create_app(settings, runtime=Runtime(settings, clock=clock, owner="test")))
    resp = await _suspend(client, approvers=["web:bob", "web:carol"])  # the rule's group wins over the agent's
    assert resp.status == 201, await resp.text()
    approval_id = (await resp.json())["id"]
    service = _rt(client).service
    assert (await service.get(approval_id)).approvers == ("group:finance",)
    with pytest.raises(NotAnApprover):
        await service.decide(approval_id, Outcome.APPROVE, "web:bob", channel="web")
    assert (await service.decide(approval_id, Outcome.APPROVE, "web:alice", channel="web")).status is Status.APPROVED


async def test_an_escalation_to_a_group_adds_its_members_as_approvers(
    aiohttp_client: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock
) -> None:
    escalating = {"timeout": "1h", "on_timeout": "escalate", "escalate_to": ["group:ops"], "escalation_timeout": "1h"}
    settings = settings_factory(**{**SECTIONS, "policies": {"escalating": escalating}})
    client = await aiohttp_client(create_app(settings, runtime=Runtime(settings, clock=clock, owner="test")))
    resp = await _suspend(client, approvers=["group:finance"], policy="escalating")
    assert resp.status == 201, await resp.text()
    approval_id, rt = (await resp.json())["id"], _rt(client)
    with pytest.raises(NotAnApprover):  # bob is in ops, not in finance: not yet
        await rt.service.decide(approval_id, Outcome.APPROVE, "web:bob", channel="web")
    await rt.scheduler.tick(clock.advance(minutes=61))
    escalated = await rt.service.get(approval_id)
    assert escalated.escalations == 1 and escalated.approvers == ("group:finance", "group:ops")
    assert escalated.channels == ("web",)  # a group is people, not a channel
    assert (await rt.service.decide(approval_id, Outcome.APPROVE, "web:bob", channel="web")).status is Status.APPROVED


@pytest.mark.parametrize("target", ["group:nope", "group:"])
async def test_an_agent_cannot_escalate_to_an_unknown_group(api: TestClient[Any, Any], target: str) -> None:
    inline = {"timeout": "1h", "on_timeout": "escalate", "escalate_to": [target]}
    await _refused(api, "escalate_to", policy=inline)
