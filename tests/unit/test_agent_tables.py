"""`[security.agents]` entries as tables: `key`, and the named `policies` the agent may ask for."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from gateway.config import effective_config, load_settings
from gateway.core.errors import ConfigError, PolicyNotAllowed
from gateway.core.principals import Principal
from gateway.service.policies import resolve_policy
from gateway.testing import TEST_SECRET

A, B = "a-key-0123456789abcdef", "b-key-0123456789abcdef"
NOW = datetime(2030, 1, 1, tzinfo=UTC)
POLICIES = {"payments": {"timeout": "1h"}, "auto": {"timeout": "1h", "on_timeout": "approve"}}


def load(agents: Any) -> Any:
    security = {"secret_keys": [TEST_SECRET], "agents": agents}
    return load_settings(None, env={}, defaults={"security": security}, tables={"policies": POLICIES})


def test_the_string_and_table_forms_give_the_same_principals() -> None:
    s = load({"billing": A, "payroll": {"key": B, "policies": ["payments"]}})
    assert dict(s.security.agents) == {"billing": A, "payroll": B}
    assert dict(s.security.agent_policies) == {"payroll": ("payments",)}
    assert s.security.principals().resolve(B.encode()) == Principal("agent", "payroll")
    shown = effective_config(s)["security"]
    assert B not in str(shown) and shown["agent_policies"] == {"payroll": ["payments"]}
    assert dict(load({"payroll": {"key": B}}).security.agent_policies) == {}  # no list: any policy


def test_only_listed_names_and_default_resolve_for_that_agent() -> None:
    s = load({"billing": A, "payroll": {"key": B, "policies": ["payments"]}})
    payroll, billing = Principal("agent", "payroll"), Principal("agent", "billing")
    for value in ("payments", None, "default", {"name": "payments"}):
        resolve_policy(s, value, principal=payroll, now=NOW)
    for value, field in (("auto", "policy"), ({"name": "auto", "timeout": "1h"}, "policy.name")):
        with pytest.raises(PolicyNotAllowed) as err:
            resolve_policy(s, value, principal=payroll, now=NOW)
        assert err.value.field == field
    assert resolve_policy(s, "auto", principal=billing, now=NOW).name == "auto"
    assert resolve_policy(s, "auto", principal=Principal("operator", "payroll"), now=NOW).name == "auto"
    nothing = load({"payroll": {"key": B, "policies": []}})
    assert resolve_policy(nothing, None, principal=payroll, now=NOW).name == "default"
    with pytest.raises(PolicyNotAllowed, match="none"):
        resolve_policy(nothing, "payments", principal=payroll, now=NOW)


@pytest.mark.parametrize(
    ("entry", "key"),
    [
        ({"policies": ["payments"]}, "security.agents.payroll.key"),
        ({"key": B, "policies": ["payments", "nope"]}, "security.agents.payroll.policies[1]"),
        ({"key": B, "policy": "payments"}, "security.agents.payroll.policy"),
        ({"key": 3}, "security.agents.payroll.key"),
        ({"key": "short"}, "security.agents.payroll"),
    ],
)
def test_a_bad_table_stops_the_start_naming_the_key(entry: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as err:
        load({"payroll": entry})
    assert err.value.key == key, err.value.message
