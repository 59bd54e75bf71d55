"""Every key is a principal: the config tables, the older lists, and the checks at start."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.config import effective_config, load_settings
from gateway.core.errors import ConfigError
from gateway.core.principals import NAME_RE, Principal, derived_name
from gateway.testing import TEST_SECRET

A, B, C = "a-key-0123456789abcdef", "b-key-0123456789abcdef", "c-key-0123456789abcdef"


def load(**security: Any) -> Any:
    return load_settings(None, env={}, defaults={"security": {"secret_keys": [TEST_SECRET], **security}})


def test_tables_and_lists_each_give_one_principal_per_key() -> None:
    s = load(agents={"billing": A}, operators={"alice": B}, api_keys=[C], operator_keys=["d-key-0123456789abcdef"])
    principals = s.security.principals()
    assert principals.resolve(A.encode()) == Principal("agent", "billing")
    assert principals.resolve(B.encode()) == Principal("operator", "alice")
    legacy = principals.resolve(C.encode())
    assert legacy == Principal("agent", derived_name(C)) and NAME_RE.match(legacy.name)
    assert principals.resolve(b"d-key-0123456789abcdef") == Principal(
        "operator", derived_name("d-key-0123456789abcdef")
    )
    assert principals.resolve(b"nope-0123456789abcdef") is None and principals.has_operators
    assert C not in legacy.identity  # a stable name that never shows the key


def test_the_environment_sets_the_tables() -> None:
    env = {"HITL_SECURITY_SECRET_KEYS": TEST_SECRET, "HITL_SECURITY_AGENTS": f"billing={A},mail={B}"}
    s = load_settings(None, env=env)
    assert dict(s.security.agents) == {"billing": A, "mail": B}


def test_principal_names_are_lower_case_from_the_start() -> None:
    s = load(agents={"Billing": {"key": A, "policies": ["default"]}}, operators={"Alice": B})
    assert dict(s.security.agents) == {"billing": A} and dict(s.security.operators) == {"alice": B}
    assert dict(s.security.agent_policies) == {"billing": ("default",)}
    assert {p.identity for p, _ in s.security.principal_keys()} == {"agent:billing", "operator:alice"}
    env = {"HITL_SECURITY_SECRET_KEYS": TEST_SECRET, "HITL_SECURITY_AGENTS": f"Mail={A}"}
    assert dict(load_settings(None, env=env).security.agents) == {"mail": A}


@pytest.mark.parametrize(
    ("security", "key"),
    [
        ({"agents": {"bad name": A}}, "security.agents.bad name"),
        ({"agents": {"x" * 65: A}}, "security.agents." + "x" * 65),
        ({"operators": {"ops": "short"}}, "security.operators.ops"),
        ({"agents": {"a": A}, "operators": {"b": A}}, "security.operators"),  # one key, two principals
        ({"agents": {"a": A}, "api_keys": [A]}, "security.agents"),
        ({"api_keys": [A], "operator_keys": [A]}, "security.operators"),
        ({"agents": {derived_name(A): B}, "api_keys": [A]}, f"security.agents.{derived_name(A)}"),
        ({"inline_policies": "sometimes"}, "security.inline_policies"),
        ({"agents": {"billing": A, "Billing": B}}, "security.agents.Billing"),  # one name in two spellings
        ({"operators": {"Ops": A, "OPS": B}}, "security.operators.OPS"),
    ],
)
def test_bad_principals_stop_the_start_naming_the_key(security: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as err:
        load(**security)
    assert err.value.key == key, err.value.message


def test_check_config_masks_every_key() -> None:
    shown = json.dumps(effective_config(load(agents={"billing": A}, operators={"alice": B}, api_keys=[C])))
    assert all(k not in shown for k in (A, B, C))
    assert '"agents": {"billing": "***"}' in shown and '"inline_policies": "restrict"' in shown
