"""The `hitl-gateway` command as a user runs it: real subprocesses, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.testing import TEST_API_KEY, TEST_SECRET
from tests.procs import write_config

pytestmark = pytest.mark.subprocess  # every test here starts a process


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")}
    return subprocess.run(
        [sys.executable, "-m", "gateway", *args],
        cwd=cwd,
        env=base | (env or {}),
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path / "gw.toml", f"sqlite:///{tmp_path / 'gw.db'}", 8099)


def test_check_config_masks_secrets(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "tg.toml",
        f"sqlite:///{tmp_path / 'gw.db'}",
        8099,
        extra='[telegram]\nbot_token = "123456:SECRETTOKENVALUE"\n',
    )
    out = run("--config", str(config), "check-config", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["server"]["port"] == 8099
    for secret in (TEST_SECRET, TEST_API_KEY, "SECRETTOKENVALUE"):
        assert secret not in out.stdout + out.stderr
    assert data["telegram"]["bot_token"].startswith("***")


def test_bad_config_is_one_line_naming_the_key_and_exit_2(config: Path, tmp_path: Path) -> None:
    out = run("--config", str(config), "check-config", cwd=tmp_path, env={"HITL_SERVER_PORT": "http"})
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "server.port" in lines[0]
    out = run("--config", str(config), "serve", cwd=tmp_path, env={"HITL_STORE_URL": "oracle://x"})
    assert out.returncode == 2 and "store.url" in out.stderr and "Traceback" not in out.stderr


def test_a_typo_in_a_policy_boolean_stops_the_start_naming_the_key(config: Path, tmp_path: Path) -> None:
    out = run(
        "--config", str(config), "check-config", cwd=tmp_path, env={"HITL_POLICIES_STRICT_REQUIRE_REASON": "ture"}
    )
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "policies.strict.require_reason" in lines[0] and "'ture'" in lines[0]


def test_migrate_and_approvals_commands(config: Path, tmp_path: Path) -> None:
    out = run("--config", str(config), "migrate", cwd=tmp_path)
    assert out.returncode == 0 and "schema at version" in out.stdout
    # suspend through the service (the CLI has no suspend: agents use the API or SDK)
    code = (
        "import asyncio\n"
        "from gateway.config import load_settings\n"
        "from gateway.runtime import Runtime\n"
        "from gateway.service import SuspendRequest\n"
        "async def main():\n"
        f"    rt = Runtime(load_settings({str(config)!r}, env={{}}))\n"
        "    await rt.start(background=False)\n"
        "    a, _ = await rt.service.suspend(SuspendRequest(run_id='r9', step='s', title='Ship it'))\n"
        "    print(a.id)\n"
        "    await rt.stop()\n"
        "asyncio.run(main())\n"
    )
    approval_id = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()
    listed = run("--config", str(config), "approvals", "list", "--status", "waiting_approval", cwd=tmp_path)
    assert approval_id in listed.stdout and "Ship it" in listed.stdout
    out = run("--config", str(config), "approvals", "approve", approval_id, "--by", "web:ann", "--json", cwd=tmp_path)
    assert out.returncode == 0 and json.loads(out.stdout)["status"] == "approved"
    out = run("--config", str(config), "approvals", "reject", approval_id, "--by", "web:bob", cwd=tmp_path)
    assert out.returncode == 2 and "already approved by operator:cli" in out.stderr  # a user error: exit 2
    shown = json.loads(run("--config", str(config), "approvals", "show", approval_id, "--json", cwd=tmp_path).stdout)
    assert [e["kind"] for e in shown["events"]] == ["suspended", "card_posted", "approved"]
    out = run("--config", str(config), "approvals", "cancel", "nope", cwd=tmp_path)
    assert out.returncode == 2 and "not_found" in out.stderr


def test_dev_mode_generates_and_keeps_a_key(tmp_path: Path) -> None:
    first = run("--dev", "check-config", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "dev API key" in first.stderr
    secrets_file = tmp_path / "var" / "dev-secrets.json"
    assert oct(secrets_file.stat().st_mode & 0o777) == "0o600"
    second = run("--dev", "check-config", cwd=tmp_path)
    assert "dev API key" not in second.stderr  # printed the first time only
    assert json.loads(second.stdout)["store"]["url"] == "sqlite:///./var/hitl-gateway.db"


def test_dev_mode_has_an_operator_and_prints_its_key(tmp_path: Path) -> None:
    """`make run`: an agent (agent:dev) and an operator (operator:dev); an older dev-secrets file
    without an operator key gets one, printed once."""
    secrets_file = tmp_path / "var" / "dev-secrets.json"
    secrets_file.parent.mkdir()
    secrets_file.write_text(json.dumps({"secret_key": TEST_SECRET, "api_key": TEST_API_KEY}))
    first = run("--dev", "check-config", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "dev operator key (operator:dev)" in first.stderr and "dev API key" not in first.stderr
    data = json.loads(secrets_file.read_text())
    assert data["api_key"] == TEST_API_KEY and data["operator_key"] in first.stderr
    assert oct(secrets_file.stat().st_mode & 0o777) == "0o600"
    shown = json.loads(first.stdout)["security"]
    assert shown["agents"] == {"dev": "***"} and shown["operators"] == {"dev": "***"}
    again = run("--dev", "check-config", cwd=tmp_path)
    assert "operator key" not in again.stderr


def test_no_secret_keys_without_dev_is_refused(tmp_path: Path) -> None:
    out = run("check-config", cwd=tmp_path)
    assert out.returncode == 2 and "security.secret_keys" in out.stderr
