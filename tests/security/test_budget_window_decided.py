"""A budget's window runs over when steps went ahead, not when they were asked for. Counting by
`created_at` left out every approval that took longer than the window to decide: a charge asked
for two hours ago and approved a minute ago (by a person, or by its policy at the deadline) was
spent in the last hour, yet `spent("amount", "1h")` did not see it. On both backends, over real
HTTP against the in-process app, with a FakeClock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.http.keys import RUNTIME
from gateway.settings import Settings
from gateway.testing import FakeClock
from tests.conftest import AUTH, OPERATOR, suspended

Client = TestClient[Any, Any]
RULES = [
    {
        "name": "hourly-budget",
        "when": 'step == "charge" && spent("amount", "1h") + args.amount <= 1000 && count("1h") < 5',
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
            "default": {"timeout": "1d", "on_timeout": "reject"},
            "unless-rejected": {"timeout": "2h", "on_timeout": "approve"},
        },
        rule=RULES,
    )


async def test_a_step_approved_at_a_deadline_past_the_window_still_counts(client: Client, clock: FakeClock) -> None:
    big = await suspended(client, run_id="big", policy="unless-rejected", args={"amount": 900000})
    assert big["status"] == "waiting_approval"
    await client.server.app[RUNTIME].scheduler.tick(clock.advance(hours=2, minutes=1))
    view = await (await client.get(f"/v1/approvals/{big['id']}", headers=AUTH)).json()
    assert (view["status"], view["decision"]["outcome"]) == ("timed_out", "approve")
    assert (await suspended(client, run_id="small", args={"amount": 10}))["status"] == "waiting_approval"
    clock.advance(hours=1, seconds=1)  # an hour after it went ahead, it is out of the window
    assert (await suspended(client, run_id="later", args={"amount": 10}))["status"] == "approved"


async def test_a_person_approving_late_counts_from_their_approve(client: Client, clock: FakeClock) -> None:
    slow = await suspended(client, run_id="slow", args={"amount": 5000})
    assert slow["status"] == "waiting_approval"  # over the budget: a person decides
    clock.advance(hours=3)
    resp = await client.post(f"/v1/approvals/{slow['id']}/decision", json={"outcome": "approve"}, headers=OPERATOR)
    assert resp.status == 200, await resp.text()
    assert (await suspended(client, run_id="small", args={"amount": 10}))["status"] == "waiting_approval"
