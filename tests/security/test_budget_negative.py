"""A budget is a cap the agent cannot raise: `spent()` sums `args.FIELD` over every step the agent
had approved, so a negative amount on any step a rule lets through (a harmless `note`) gave the
budget back, and then some: one note of -1000000 and every later charge fitted under a budget of
1000. A value below zero adds nothing. On both backends, over real HTTP against the in-process
app."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.settings import Settings
from tests.conftest import suspended

Client = TestClient[Any, Any]
RULES = [
    {"name": "notes", "when": 'step == "note"', "then": "allow"},
    {
        "name": "within-budget",
        "when": 'step == "charge" && args.amount > 0 && spent("amount", "24h") + args.amount <= 1000',
        "then": "allow",
    },
]


@pytest.fixture
def db_url(store_url: str) -> str:
    return store_url


@pytest.fixture
def settings(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory(rule=RULES)


async def _status(client: Client, **over: Any) -> str:
    return str((await suspended(client, **over))["status"])


async def test_a_negative_amount_on_an_allowed_step_gives_no_budget_back(client: Client) -> None:
    assert await _status(client, run_id="c1", args={"amount": 800}) == "approved"
    assert await _status(client, run_id="n1", step="note", args={"amount": -1000000}) == "approved"
    # 800 spent of 1000: a charge of 300 is over the budget, whatever the notes said
    assert await _status(client, run_id="c2", args={"amount": 300}) == "waiting_approval"
    assert await _status(client, run_id="c3", args={"amount": 200}) == "approved"
