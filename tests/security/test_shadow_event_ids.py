"""An agent cannot count the shadow verdicts hidden from it by the gaps in its events' ids.

The `rule_shadow` events of a suspend are left out of what an agent's key reads
(gateway.core.disclosure), but they are written in the suspend's own transaction, between its
`suspended` event and the next one (the web inbox's `card_posted`, or a rule's decision), and
event ids are one sequence. The ids the agent does read then skip one number per hidden verdict:
by varying its args, an agent learns which bodies a rule not yet enforced would catch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

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


@pytest.mark.xfail(
    strict=True,
    reason="event ids are one sequence and the hidden rule_shadow events take theirs in the suspend's"
    " transaction: hiding them needs ids an agent cannot compare (or their own sequence), not done here",
)
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
