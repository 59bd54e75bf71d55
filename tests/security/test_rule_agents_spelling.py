"""A rule's `agents` names agents as the CEL fact does (`agent:billing`) or bare (`billing`): the
prefixed spelling used to be kept as it was, matched no agent, and so silently switched off the
rule, a deny included. A name no agent can have stops the start naming the entry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.core.errors import ConfigError
from gateway.settings import Settings
from tests.conftest import suspend_body

Client = TestClient[Any, Any]
BILLING = {"Authorization": "Bearer agent-billing-key-0123456789abcdef"}
NO_REFUNDS = {"name": "no-refunds", "when": 'step == "refund"', "then": "deny", "agents": ["Agent:Billing"]}


@pytest.fixture
def settings(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory(security={"agents": {"billing": BILLING["Authorization"][7:]}}, rule=[NO_REFUNDS])


async def test_a_rule_naming_agent_colon_name_applies_to_that_agent(client: Client) -> None:
    resp = await client.post("/v1/suspend", json=suspend_body(step="refund"), headers=BILLING)
    assert resp.status == 201, await resp.text()
    assert (await resp.json())["status"] == "rejected"


@pytest.mark.parametrize("name", ["operator:billing", "two words", "", "agent:"])
def test_a_rule_agent_no_agent_can_have_stops_the_start(settings_factory: Callable[..., Settings], name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        settings_factory(rule=[NO_REFUNDS | {"agents": ["billing", name]}])
    assert caught.value.key == "rule.no-refunds.agents[1]", caught.value
