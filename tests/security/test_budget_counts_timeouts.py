"""A budget counts every step that went ahead: one a policy approved at its deadline
(`on_timeout = "approve"`, status `timed_out` with an approve) was spent like one a person
approved. Counting only `approved` let an agent push charges through such a policy, unseen by
`spent()` and `count()`, and keep its rule-allowed budget untouched. On both backends, over
real HTTP against the in-process app, with a FakeClock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.http.keys import RUNTIME
from gateway.settings import Settings
from gateway.testing import FakeClock
from tests.conftest import AUTH, suspended

Client = TestClient[Any, Any]
RULES = [
    {
        "name": "within-budget",
        "when": 'step == "charge" && spent("amount", "24h") + args.amount <= 1000 && count("24h") < 3',
        "then": "allow",
    },
]


@pytest.fixture
def db_url(store_url: str) -> str:
    return store_url


@pytest.fixture
def settings(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory(
        policies={
            "default": {"timeout": "1h", "on_timeout": "reject"},
            "unless-rejected": {"timeout": "10m", "on_timeout": "approve"},
            "silent-no": {"timeout": "10m", "on_timeout": "reject"},
        },
        rule=RULES,
    )


async def test_a_step_approved_at_its_deadline_counts_against_the_budget(client: Client, clock: FakeClock) -> None:
    big = await suspended(client, run_id="big", policy="unless-rejected", args={"amount": 900000})
    assert big["status"] == "waiting_approval"  # over the budget: the rule does not allow it
    rejected = await suspended(client, run_id="no", policy="silent-no", args={"amount": 5000})
    await client.server.app[RUNTIME].scheduler.tick(clock.advance(minutes=11))
    view = await (await client.get(f"/v1/approvals/{big['id']}", headers=AUTH)).json()
    assert (view["status"], view["decision"]["outcome"]) == ("timed_out", "approve")  # it went ahead
    view = await (await client.get(f"/v1/approvals/{rejected['id']}", headers=AUTH)).json()
    assert (view["status"], view["decision"]["outcome"]) == ("timed_out", "reject")
    # 900000 were spent today: a charge of 10 is over the budget, and a person decides
    small = await suspended(client, run_id="small", args={"amount": 10})
    assert small["status"] == "waiting_approval", small
