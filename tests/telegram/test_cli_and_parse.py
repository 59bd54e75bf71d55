"""CLI wiring and the pure parse helpers."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path

import pytest
from telegram import Update

from adapters.telegram import parse
from gateway.cli.main import main
from gateway.testing import TEST_SECRET
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.procs import write_config


def test_telegram_commands_need_a_bot_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HITL_SECURITY_SECRET_KEYS", TEST_SECRET)
    monkeypatch.setenv("HITL_STORE_URL", f"sqlite:///{tmp_path / 'g.db'}")
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        assert main(["telegram", "set-webhook"]) == 2
    finally:  # main() installs the CLI's log handler: do not leave it in the test process
        root.handlers[:] = handlers
        root.setLevel(level)
    assert "telegram.bot_token is not set" in capsys.readouterr().err


def test_refs_and_chat_ids() -> None:
    assert parse.parse_ref("-100123:45") == (-100123, 45)
    assert parse.parse_ref("@ops_channel:7") == ("@ops_channel", 7)
    assert parse.chat_id("@ops") == "@ops" and parse.chat_id("-5") == -5
    with pytest.raises(ValueError):
        parse.parse_ref("nonsense")


def test_read_update_ignores_plain_messages() -> None:
    plain = {
        "update_id": 1,
        "message": {
            "message_id": 1,
            "date": 0,
            "chat": {"id": 5, "type": "private"},
            "from": {"id": 5, "is_bot": False, "first_name": "A"},
            "text": "hello",
        },
    }
    assert parse.read_update(Update.de_json(plain, None)) is None


@pytest.mark.subprocess
async def test_cli_commands_never_log_the_bot_token(tmp_path: Path, tg_api: FakeTelegramAPI) -> None:
    """python-telegram-bot puts the token in its 'rejected by the server' message; every
    command, not only `serve`, must log through the redacting handler."""
    wrong = "987654321:WRONG-token_" + "x" * 24  # the fake answers 401 to any other token
    config = write_config(
        tmp_path / "gw.toml",
        f"sqlite:///{tmp_path / 'g.db'}",
        8099,
        f'[telegram]\nbot_token = "{wrong}"\nbase_url = "{tg_api.base_url}"\n',
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gateway",
        "--config",
        str(config),
        "approvals",
        "list",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if not k.startswith("HITL_")},
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert "rejected" in err.decode()  # the warning is there...
    assert wrong not in (out + err).decode() and "WRONG-token" not in (out + err).decode()  # ...not the token
