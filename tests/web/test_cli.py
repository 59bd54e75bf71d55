"""`hitl-gateway web login-link NAME` and `hitl-gateway web hash-password`."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from gateway.cli.main import main
from gateway.http.web.auth import verify_password
from gateway.testing import TEST_SECRET
from tests.web.conftest import HASH


@pytest.fixture
def config(tmp_path: Path) -> str:
    path = tmp_path / "gw.toml"
    path.write_text(
        f'[server]\npublic_url = "https://hitl.example.com/"\n[security]\nsecret_keys = ["{TEST_SECRET}"]\n'
        f'[web]\napprovers = ["alice"]\npasswords = {{ alice = "{HASH}" }}\n'
    )
    return str(path)


def test_login_link_command(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", config, "web", "login-link", "alice"]) == 0
    link = capsys.readouterr().out.strip()
    assert link.startswith("https://hitl.example.com/login/link/") and len(link) > 60
    assert main(["--config", config, "web", "login-link", "mallory"]) == 2  # a user's mistake: exit 2
    err = capsys.readouterr().err
    assert "'mallory' is not in web.approvers" in err and "internal_error" not in err


def test_hash_password_command(
    config: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("a long passphrase\n"))
    assert main(["--config", config, "web", "hash-password"]) == 0
    hashed = capsys.readouterr().out.strip()
    assert hashed.startswith("scrypt$16384$8$1$") and verify_password("a long passphrase", hashed)
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert main(["--config", config, "web", "hash-password"]) == 2
    assert "at least 8 characters" in capsys.readouterr().err
