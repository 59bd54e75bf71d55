"""A value that does not parse stops the start naming its key, from the file and the environment
alike: no typo loads as a default."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from gateway.config import load_settings
from gateway.core.errors import ConfigError
from gateway.testing import TEST_SECRET

BASE = f"""
[security]
secret_keys = ["{TEST_SECRET}"]

[policies.strict]
timeout = "1h"

[workers.w]
url = "https://hooks.example.com/resume"
allowed_hosts = ["hooks.example.com"]
"""

# (the variable, a value that does not parse, the key the error names)
ENV_TYPOS = [
    ("HITL_POLICIES_STRICT_REQUIRE_REASON", "ture", "policies.strict.require_reason"),
    ("HITL_POLICIES_STRICT_REQUIRE_REASON", "", "policies.strict.require_reason"),
    ("HITL_POLICIES_STRICT_QUORUM", "two", "policies.strict.quorum"),
    ("HITL_POLICIES_STRICT_MAX_EXTENSIONS", "1.5", "policies.strict.max_extensions"),
    ("HITL_POLICIES_STRICT_EXTEND", '["1h"', "policies.strict.extend"),
    ("HITL_POLICIES_STRICT_TIMEOUT", "1 hour", "policies.strict.timeout"),
    ("HITL_SECURITY_TOKEN_DECISIONS", "ture", "security.token_decisions"),
    ("HITL_REDACTION_DEFAULTS", "nope", "redaction.defaults"),
    ("HITL_SERVER_PORT", "80o0", "server.port"),
    ("HITL_SCHEDULER_BATCH", "", "scheduler.batch"),
    ("HITL_STORE_LEASE", "60 secs", "store.lease"),
    ("HITL_RETENTION_RAW_AFTER", "forever", "retention.raw_after"),
    ("HITL_WORKERS_W_MAX_ATTEMPTS", "five", "workers.w.max_attempts"),
    ("HITL_WORKERS_W_TIMEOUT", "5 mins", "workers.w.timeout"),
    ("HITL_SECURITY_OPERATORS", "alice", "security.operators"),
    ("HITL_SECURITY_OPERATORS", "=operator-key-0123456789", "security.operators"),
    ("HITL_SECURITY_OPERATORS", "ops=key-a-0123456789,ops=key-b-0123456789", "security.operators.ops"),
    ("HITL_TELEGRAM_RESEND_UNCERTAIN", "ture", "telegram.resend_uncertain"),
    ("HITL_TELEGRAM_APPROVERS", "111,bob", "telegram.approvers[1]"),
    ("HITL_EMAIL_STARTTLS", "maybe", "email.starttls"),
    ("HITL_EMAIL_PORT", "smtp", "email.port"),
    ("HITL_MCP_GATE_WAIT_SECONDS", "25s", "mcp_gate.wait_seconds"),
]

# (the section, the line, the key the error names): the same typos written in the file
FILE_TYPOS = [
    ("policies.strict", 'require_reason = "ture"', "policies.strict.require_reason"),
    ("policies.strict", 'require_reason = "1"', None),  # a spelling of true: the same as from the environment
    ("policies.strict", 'quorum = "two"', "policies.strict.quorum"),
    ("policies.strict", "quorum = 1.5", "policies.strict.quorum"),
    ("server", 'port = "80o0"', "server.port"),
    ("server", "port = 8080.5", "server.port"),
    ("redaction", 'defaults = "nope"', "redaction.defaults"),
    ("scheduler", "poll_interval = true", "scheduler.poll_interval"),
    ("telegram", 'resend_uncertain = "ture"', "telegram.resend_uncertain"),
    ("email", 'tls = "yes please"', "email.tls"),
    ("web", "approvers = [1]", "web.approvers[0]"),
]


def write(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "hitl-gateway.toml"
    path.write_text(BASE + extra)
    return path


@pytest.mark.parametrize(("name", "value", "key"), ENV_TYPOS)
def test_a_variable_that_does_not_parse_names_its_key(tmp_path: Path, name: str, value: str, key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path), env={name: value})
    assert caught.value.key == key, caught.value


@pytest.mark.parametrize(("section", "line", "key"), FILE_TYPOS)
def test_a_file_value_that_does_not_parse_names_its_key(
    tmp_path: Path, section: str, line: str, key: str | None
) -> None:
    body = BASE.replace("[policies.strict]\n", f"[policies.strict]\n{line}\n") if section == "policies.strict" else ""
    path = tmp_path / "hitl-gateway.toml"
    path.write_text(body or f"{BASE}\n[{section}]\n{line}\n")
    if key is None:
        assert load_settings(path, env={}).policies["strict"].require_reason is True
        return
    with pytest.raises(ConfigError) as caught:
        load_settings(path, env={})
    assert caught.value.key == key, caught.value


@pytest.mark.parametrize(("value", "expected"), [("true", True), ("YES", True), ("1", True), ("off", False)])
def test_every_spelling_of_a_boolean_reads_the_same_in_a_policy(tmp_path: Path, value: str, expected: bool) -> None:
    env = {"HITL_POLICIES_STRICT_REQUIRE_REASON": value, "HITL_SECURITY_TOKEN_DECISIONS": value}
    settings = load_settings(write(tmp_path), env=env)
    assert settings.policies["strict"].require_reason is expected
    assert settings.security.token_decisions is expected


def test_numbers_and_durations_from_the_environment_read_as_in_the_file(tmp_path: Path) -> None:
    env = {"HITL_POLICIES_STRICT_QUORUM": " 2 ", "HITL_WORKERS_W_TIMEOUT": "90s", "HITL_SERVER_PORT": "9001"}
    settings = load_settings(write(tmp_path), env=env)
    assert settings.policies["strict"].quorum == 2
    assert settings.workers["w"].timeout == timedelta(seconds=90)
    assert settings.server.port == 9001


def test_a_named_table_given_as_a_value_is_refused_before_the_environment_fills_it(tmp_path: Path) -> None:
    """`policies = 5` with HITL_POLICIES_* set: the file's mistake is named, not replaced."""
    path = tmp_path / "hitl-gateway.toml"
    path.write_text(f'policies = 5\n[security]\nsecret_keys = ["{TEST_SECRET}"]\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(path, env={"HITL_POLICIES_STRICT_TIMEOUT": "1h"})
    assert caught.value.key == "policies"
