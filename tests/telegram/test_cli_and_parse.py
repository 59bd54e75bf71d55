"""CLI wiring and the pure parse helpers."""

from __future__ import annotations

from pathlib import Path

import pytest
from telegram import Update

from adapters.telegram import parse
from gateway.cli import main
from gateway.testing import TEST_SECRET


def test_telegram_commands_need_a_bot_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HITL_SECURITY_SECRET_KEYS", TEST_SECRET)
    monkeypatch.setenv("HITL_STORE_URL", f"sqlite:///{tmp_path / 'g.db'}")
    assert main(["telegram", "set-webhook"]) == 2
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
