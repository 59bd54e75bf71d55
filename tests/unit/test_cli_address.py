"""`web login-link` links to where the gateway serves: `server.public_url` when the config sets
it, else the address a running `serve` on the same store recorded (`serve --port P` says P), else
the config's host and port (gateway.cli.address)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from gateway.cli import address
from gateway.cli.main import main
from gateway.config import Settings, load_settings
from gateway.testing import TEST_SECRET

DEAD_PID = 2**22 + 12345  # above Linux's largest pid_max: never a live process


def _settings(tmp_path: Path, server: str = "port = 8080\n", db: str = "gw.db") -> tuple[Path, Settings]:
    path = tmp_path / "gw.toml"
    path.write_text(
        f'[server]\n{server}[store]\nurl = "sqlite:///{tmp_path / db}"\n'
        f'[security]\nsecret_keys = ["{TEST_SECRET}"]\n[web]\napprovers = ["alice"]\n'
    )
    return path, load_settings(path, {})


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return {"XDG_STATE_HOME": str(tmp_path / "state")}


def test_a_serve_on_another_port_is_where_the_link_goes(tmp_path: Path, env: dict[str, str]) -> None:
    _, settings = _settings(tmp_path)
    assert address.running_url(settings, env) == "http://127.0.0.1:8080"  # nothing serves: the config's
    recorded = address.record(settings, 19123, env)  # `serve --port 19123`, this process standing in
    assert recorded is not None and recorded.name == str(os.getpid())
    assert address.running_url(settings, env) == "http://127.0.0.1:19123"
    _, other = _settings(tmp_path, db="other.db")  # another store: another gateway
    assert address.running_url(other, env) == "http://127.0.0.1:8080"
    address.forget(recorded)
    assert address.running_url(settings, env) == "http://127.0.0.1:8080"
    assert not recorded.parent.exists()  # nothing is left behind per store


def test_a_dead_gateways_record_is_ignored_and_removed(tmp_path: Path, env: dict[str, str]) -> None:
    _, settings = _settings(tmp_path)
    directory = address.serving_dir(settings, env)
    assert directory is not None
    directory.mkdir(parents=True)
    (directory / str(DEAD_PID)).write_text("http://127.0.0.1:19999\n")  # killed -9: never removed
    assert address.running_url(settings, env) == "http://127.0.0.1:8080"
    assert not (directory / str(DEAD_PID)).exists()


def test_a_configured_public_url_wins_and_nothing_is_recorded(tmp_path: Path, env: dict[str, str]) -> None:
    _, settings = _settings(tmp_path, 'port = 8080\npublic_url = "https://hitl.example.com"\n')
    assert address.record(settings, 19124, env) is None
    _, derived = _settings(tmp_path)  # the same store, no public_url: a record there is not used either
    address.record(derived, 19125, env)
    assert address.running_url(settings, env) == "https://hitl.example.com"


def test_the_store_url_holds_no_secret_in_the_state_dir(tmp_path: Path, env: dict[str, str]) -> None:
    settings = load_settings(
        None,
        {"HITL_STORE_URL": "postgresql://gw:s3cret-pw@db:5432/gw", "HITL_SECURITY_SECRET_KEYS": TEST_SECRET},
        validate=False,
    )
    path = address.record(settings, 19126, env)
    assert path is not None
    names = [p.name for p in (tmp_path / "state").rglob("*")]
    assert not [n for n in names if "s3cret" in n or "db" in n], names
    assert path.read_text() == "http://127.0.0.1:19126\n"


def test_login_link_follows_the_port_serve_was_given(
    tmp_path: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    config, settings = _settings(tmp_path)
    recorded = address.record(settings, 19127, env)
    try:
        assert main(["--config", str(config), "web", "login-link", "alice"]) == 0
        assert capsys.readouterr().out.startswith("http://127.0.0.1:19127/login/link/")
    finally:
        address.forget(recorded)
    assert main(["--config", str(config), "web", "login-link", "alice"]) == 0
    assert capsys.readouterr().out.startswith("http://127.0.0.1:8080/login/link/")
