"""Run ids and idempotency keys are per agent: which namespace a record or a name means."""

from __future__ import annotations

import pytest

from gateway.core.errors import ValidationError
from gateway.core.principals import NO_AGENT, Principal, agent_namespace, namespace_of


def test_each_agent_has_its_own_namespace_and_everyone_else_shares_none() -> None:
    assert namespace_of("agent:billing") == Principal("agent", "billing").namespace == "agent:billing"
    for creator in ("operator:alice", None):  # operators, in-process callers, rows from before principals
        assert namespace_of(creator) == NO_AGENT
    assert Principal("operator", "alice").namespace == NO_AGENT


@pytest.mark.parametrize(
    ("given", "means"), [("billing", "agent:billing"), ("agent:Billing", "agent:billing"), ("", "")]
)
def test_an_agent_is_named_by_its_name_or_identity(given: str, means: str) -> None:
    assert agent_namespace(given) == means


@pytest.mark.parametrize("given", ["operator:alice", "no such", "agent:", "x" * 65])
def test_anything_else_is_a_400_naming_agent(given: str) -> None:
    with pytest.raises(ValidationError) as refused:
        agent_namespace(given)
    assert refused.value.field == "agent"
