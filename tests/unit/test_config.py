from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from gateway.config import effective_config, load_settings
from gateway.core.errors import ConfigError
from gateway.core.models import OnTimeout

GOOD = """
[server]
host = "0.0.0.0"
port = 9000
public_url = "https://hitl.example.com"

[store]
url = "sqlite:///./var/x.db"

[security]
secret_keys = ["old-secret-0123456789", "new-secret-0123456789"]
api_keys = ["agent-key-0123456789"]

[telegram]
bot_token = "123456:ABCDEF"
webhook_secret = "hook_secret-1"
approvers = [111, 222]

[slack]
bot_token = "xoxb-abc"
signing_secret = "sign"
approvers = ["U111"]

[policies.default]
timeout = "30m"
on_timeout = "reject"

[policies.payments]
timeout = "1h"
on_timeout = "escalate"
escalate_to = ["slack:C999"]
remind = ["15m"]
quorum = 2

[workers.billing]
command = ["python", "agent.py"]
timeout = "5m"
max_attempts = 3
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hitl-gateway.toml"
    path.write_text(text)
    return path


def test_loads_every_section(tmp_path: Path) -> None:
    s = load_settings(write(tmp_path, GOOD), env={})
    assert s.server.port == 9000 and s.server.public_url == "https://hitl.example.com"
    assert s.security.secret_keys[-1] == "new-secret-0123456789"
    assert s.channel("telegram").approvers == (111, 222) and s.channel("telegram").enabled
    assert s.channel("slack").approvers == ("U111",)
    pay = s.policies["payments"]
    assert pay.timeout == timedelta(hours=1) and pay.on_timeout is OnTimeout.ESCALATE and pay.quorum == 2
    assert s.workers["billing"].command == ("python", "agent.py") and s.workers["billing"].max_attempts == 3
    assert s.enabled_channels() == {"web", "telegram", "slack"}


def test_env_overrides_every_kind_of_key(tmp_path: Path) -> None:
    env = {
        "HITL_SERVER_PORT": "9100",
        "HITL_SECURITY_API_KEYS": '["k1-0123456789abcdef", "k2-0123456789abcdef"]',
        "HITL_TELEGRAM_APPROVERS": "5,6",
        "HITL_POLICIES_PAYMENTS_TIMEOUT": "2h",
        "HITL_POLICIES_FAST_LANE_TIMEOUT": "5m",
        "HITL_WORKERS_BILLING_MAX_ATTEMPTS": "7",
    }
    s = load_settings(write(tmp_path, GOOD), env=env)
    assert s.server.port == 9100
    assert s.security.api_keys == ("k1-0123456789abcdef", "k2-0123456789abcdef")
    assert s.channel("telegram").approvers == (5, 6)
    assert s.policies["payments"].timeout == timedelta(hours=2)
    assert s.policies["fast_lane"].timeout == timedelta(minutes=5)
    assert s.workers["billing"].max_attempts == 7


def test_extend_and_require_reason_from_the_environment(tmp_path: Path) -> None:
    env = {
        "HITL_POLICIES_PAYMENTS_TIMEOUT": "1h",
        "HITL_POLICIES_PAYMENTS_ON_TIMEOUT": "reject",
        "HITL_POLICIES_PAYMENTS_EXTEND": "1h,1d",
        "HITL_POLICIES_PAYMENTS_MAX_EXTENSIONS": "3",
        "HITL_POLICIES_PAYMENTS_REQUIRE_REASON": "true",
    }
    pay = load_settings(write(tmp_path, GOOD), env=env).policies["payments"]
    assert pay.extend == (timedelta(hours=1), timedelta(days=1)) and pay.max_extensions == 3
    assert pay.require_reason is True
    with pytest.raises(ConfigError, match=r"policies\.payments\.max_extensions"):
        load_settings(write(tmp_path, GOOD), env={**env, "HITL_POLICIES_PAYMENTS_MAX_EXTENSIONS": "-1"})


def test_config_path_from_env(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    assert load_settings(None, env={"HITL_CONFIG": str(path)}).server.port == 9000


@pytest.mark.parametrize(
    ("patch", "key"),
    [
        ({"HITL_SERVER_PORT": "eighty"}, "server.port"),
        ({"HITL_SERVER_PORT": "70000"}, "server.port"),
        ({"HITL_STORE_URL": "mysql://x"}, "store.url"),
        ({"HITL_SECURITY_SECRET_KEYS": "[]"}, "security.secret_keys"),
        ({"HITL_SECURITY_SECRET_KEYS": "short"}, "security.secret_keys[0]"),
        ({"HITL_TELEGRAM_WEBHOOK_SECRET": "has space"}, "telegram.webhook_secret"),
        ({"HITL_TELEGRAM_BASE_URL": "ftp://127.0.0.1/bot"}, "telegram.base_url"),
        ({"HITL_POLICIES_PAYMENTS_TIMEOUT": "soon"}, "policies.payments.timeout"),
        ({"HITL_POLICIES_PAYMENTS_QUORUM": "0"}, "policies.payments.quorum"),
        ({"HITL_WORKERS_BILLING_TIMEOUT": "forever"}, "workers.billing.timeout"),
        ({"HITL_SERVER_PUBLIC_URL": "ftp://x"}, "server.public_url"),
    ],
)
def test_bad_values_name_the_key(tmp_path: Path, patch: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(write(tmp_path, GOOD), env=patch)
    assert err.value.key == key
    assert "\n" not in err.value.message


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[server]\nprot = 1\n", "server.prot"),
        ("[nope]\n", "nope"),
        ("[workers.w]\ncommand = ['a']\nurl = 'http://x'\n", "workers.w"),
        ("[workers.w]\nentrypoint = 'not a path'\n", "workers.w.entrypoint"),
        ("[server\n", "--config"),
    ],
)
def test_structural_errors(tmp_path: Path, text: str, key: str) -> None:
    base = '[security]\nsecret_keys = ["0123456789abcdef0"]\n'
    with pytest.raises(ConfigError) as err:
        load_settings(write(tmp_path, text + ("" if text.startswith("[security]") else base)), env={})
    assert err.value.key == key


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_settings(tmp_path / "missing.toml", env={})


def test_effective_config_masks_secrets(tmp_path: Path) -> None:
    out = effective_config(load_settings(write(tmp_path, GOOD), env={}))
    text = repr(out)
    for secret in ("old-secret-0123456789", "agent-key-0123456789", "123456:ABCDEF", "xoxb-abc", "hook_secret-1"):
        assert secret not in text
    assert out["server"]["port"] == 9000
    assert out["policies"]["payments"]["timeout"] == "1h"
