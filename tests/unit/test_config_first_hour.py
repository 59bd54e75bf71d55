"""Config stumbles of a first hour: typos in HITL_* variables, the address that follows the
listening port, and worker commands that name an interpreter (`{python}`) or a missing program."""

from __future__ import annotations

import sys

import pytest

from gateway.config import NON_CONFIG_VARS, load_settings
from gateway.core.errors import ConfigError

KEYS = {"HITL_SECURITY_SECRET_KEYS": "a-secret-of-16-chars-at-least"}


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("HITL_SERVER_PROT", "HITL_SERVER_PORT"),
        ("HITL_STORE_URI", "HITL_STORE_URL"),
        ("HITL_WORKERS_INVOICE_COMAND", "HITL_WORKERS_INVOICE_COMMAND"),
        ("HITL_POLICIES_PAYMENTS_TIMOUT", "HITL_POLICIES_PAYMENTS_TIMEOUT"),
    ],
)
def test_a_typo_in_a_hitl_variable_stops_the_start_and_names_the_closest_key(name: str, suggestion: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(env={**KEYS, name: "1"})
    assert err.value.key == name and f"did you mean {suggestion}?" in err.value.message


def test_hitl_variables_that_are_not_config_keys_pass() -> None:
    env = {**KEYS, **dict.fromkeys(NON_CONFIG_VARS - {"HITL_CONFIG"}, "x"), "HITL_SERVER_PORT": "9001"}
    assert load_settings(env=env).server.port == 9001


def test_public_url_follows_the_listening_address_unless_configured() -> None:
    assert load_settings(env=KEYS).server.public_url == "http://127.0.0.1:8080"
    moved = load_settings(env=KEYS, overrides={"server": {"port": 19080}})
    assert moved.server.public_url == "http://127.0.0.1:19080"
    assert load_settings(env={**KEYS, "HITL_SERVER_PORT": "9009"}).server.public_url == "http://127.0.0.1:9009"
    wildcard = load_settings(env={**KEYS, "HITL_SERVER_HOST": "0.0.0.0"})
    assert wildcard.server.public_url == "http://127.0.0.1:8080"  # reachable from this machine
    fixed = {**KEYS, "HITL_SERVER_PUBLIC_URL": "https://hitl.example.com"}
    assert load_settings(env=fixed, overrides={"server": {"port": 1}}).server.public_url == "https://hitl.example.com"


def test_python_in_a_worker_command_is_the_gateways_own_interpreter() -> None:
    settings = load_settings(env={**KEYS, "HITL_WORKERS_INVOICE_COMMAND": '["{python}", "-m", "agent", "resume"]'})
    assert settings.workers["invoice"].command == (sys.executable, "-m", "agent", "resume")


def test_a_worker_command_whose_program_is_missing_stops_the_start() -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(env={**KEYS, "HITL_WORKERS_INVOICE_COMMAND": '["python-that-is-not-here", "agent.py"]'})
    assert err.value.key == "workers.invoice.command"
    assert "'python-that-is-not-here' is not an executable" in err.value.message and "{python}" in err.value.message
