"""An agent cannot count the shadow verdicts hidden from it by the gaps in its events' ids.

The `rule_shadow` events of a suspend are left out of what an agent's key reads
(gateway.core.disclosure), but they are written in the suspend's own transaction, between its
`suspended` event and the next one (the web inbox's `card_posted`, or a rule's decision), and
event ids are one sequence. The ids the agent does read then skip one number per hidden verdict:
by varying its args, an agent learns which bodies a rule not yet enforced would catch. So an
agent's key reads each event's position in its trail as its id; an operator's key, the store's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.testing import FakeClock
from tests.conftest import AUTH, OPERATOR

RULES = [{"name": "big-refunds", "when": 'step == "refund" && args.amount > 1000', "then": "deny", "mode": "shadow"}]


async def _ids(client: Any, amount: int) -> list[int]:
    body = {"run_id": f"run-{amount}", "step": "refund", "title": "Refund", "args": {"amount": amount}}
    made = await (await client.post("/v1/suspend", json=body, headers=AUTH)).json()
    trail = await (await client.get(f"/v1/approvals/{made['id']}/events", headers=AUTH)).json()
    return [e["id"] for e in trail["items"]]


async def test_hidden_shadow_verdicts_leave_no_gap_in_an_agents_event_ids(
    aiohttp_client: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock
) -> None:
    settings = settings_factory(web={"approvers": ["alice"]}, rule=RULES)
    rt = Runtime(settings, clock=clock, owner="test")
    client = await aiohttp_client(create_app(settings, runtime=rt, background=False))
    caught, missed = await _ids(client, 5000), await _ids(client, 5)
    assert len(caught) == len(missed) == 2  # suspended, card_posted: the verdict is hidden
    everything = await (await client.get("/v1/approvals?limit=10", headers=OPERATOR)).json()
    assert len(everything["items"]) == 2
    # the same steps apart whether or not a shadow rule caught the body
    assert caught[1] - caught[0] == missed[1] - missed[0]
    assert caught == missed == [1, 2]  # positions in the trail the agent reads


async def test_an_operator_reads_the_stores_event_ids_with_the_shadow_verdicts(
    aiohttp_client: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock
) -> None:
    settings = settings_factory(web={"approvers": ["alice"]}, rule=RULES)
    rt = Runtime(settings, clock=clock, owner="test")
    client = await aiohttp_client(create_app(settings, runtime=rt, background=False))
    body = {"run_id": "run-op", "step": "refund", "title": "Refund", "args": {"amount": 5000}}
    made = await (await client.post("/v1/suspend", json=body, headers=AUTH)).json()
    trail = await (await client.get(f"/v1/approvals/{made['id']}/events", headers=OPERATOR)).json()
    kinds = [e["kind"] for e in trail["items"]]
    ids = [e["id"] for e in trail["items"]]
    assert "rule_shadow" in kinds and ids == sorted(ids) and len(set(ids)) == len(ids)
    stored = [e.id for e in await rt.store.list_events(made["id"])]
    assert ids == stored
