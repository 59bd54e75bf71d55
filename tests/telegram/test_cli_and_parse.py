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
    assert parse.read_update(plain) is None


def test_read_update_reads_the_fields_python_telegram_bot_reads() -> None:
    """The JSON reader and python-telegram-bot agree on a press and on a reply."""
    press = {
        "update_id": 7,
        "callback_query": {
            "id": "q1",
            "from": {"id": 42, "is_bot": False, "first_name": "Al", "username": "al"},
            "chat_instance": "c",
            "message": {"message_id": 9, "date": 0, "chat": {"id": -100, "type": "supergroup"}},
            "data": "a|x|y",
        },
    }
    got = parse.read_update(press)
    ptb = Update.de_json(press, None)
    assert ptb is not None and ptb.callback_query is not None and ptb.callback_query.message is not None
    assert got == parse.TelegramPress(7, "q1", 42, "@al", -100, 9, "a|x|y")
    assert (got.user_id, got.chat_id, got.message_id) == (
        ptb.callback_query.from_user.id,
        ptb.callback_query.message.chat.id,
        ptb.callback_query.message.message_id,
    )
    reply = {
        "update_id": 8,
        "message": {
            "message_id": 3,
            "date": 0,
            "chat": {"id": 5, "type": "private"},
            "from": {"id": 5, "is_bot": False, "first_name": "Bo"},
            "reply_to_message": {"message_id": 2, "date": 0, "chat": {"id": 5, "type": "private"}},
            "text": "too expensive",
        },
    }
    assert parse.read_update(reply) == parse.TelegramReply(8, 5, "Bo", 5, 2, "too expensive")


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"update_id": "7"},
        {"update_id": True},
        {"update_id": 1, "callback_query": {"id": "q", "from": {"id": "42"}}},
        {"update_id": 1, "callback_query": {"id": 5, "from": {"id": 42}}},
        {"update_id": 1, "callback_query": {"id": "q", "from": {"id": 42}, "message": {"chat": {"id": 1}}}},
        {"update_id": 1, "message": {"from": {"id": 1}, "reply_to_message": {"message_id": 2}, "text": "x"}},
    ],
)
def test_malformed_updates_are_refused_by_name(body: object) -> None:
    with pytest.raises(parse.NotAnUpdate):
        parse.read_update(body)  # type: ignore[arg-type]


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


async def _telegram(config: Path, *args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gateway",
        "--config",
        str(config),
        "telegram",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if not k.startswith("HITL_")},
    )
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, err.decode()


def _said(err: str) -> list[str]:
    """What the command said (its own lines, not the gateway's timestamped log lines)."""
    assert "Traceback" not in err, err
    return [line for line in err.splitlines() if line.startswith("hitl-gateway:")]


@pytest.mark.subprocess
async def test_commands_without_telegram_fail_in_one_line(tmp_path: Path, tg_api: FakeTelegramAPI) -> None:
    """Telegram out of reach (a closed port here; a proxy on the first day) is one line and exit 1;
    an http:// webhook is refused before anything starts (Telegram calls only https://), exit 2."""
    from tests.procs import free_port

    token = "123456789:" + "A" * 35
    section = f'[telegram]\nbot_token = "{token}"\nwebhook_secret = "s3cret"\n'
    closed = f'base_url = "http://127.0.0.1:{free_port()}/bot"\n'
    plain = write_config(tmp_path / "http.toml", f"sqlite:///{tmp_path / 'g.db'}", 8099, section + closed)
    code, err = await _telegram(plain, "set-webhook")
    assert code == 2 and len(err.strip().splitlines()) == 1, err  # nothing started, nothing logged
    assert "server.public_url" in err and "https://" in err and "telegram poll" in err

    https = plain.read_text().replace('public_url = "http://', 'public_url = "https://')
    (tmp_path / "https.toml").write_text(https)
    for command, call in (("set-webhook", "setWebhook"), ("poll", "deleteWebhook")):
        code, err = await _telegram(tmp_path / "https.toml", command)
        said = _said(err)
        assert code == 1 and len(said) == 1 and said[0] == err.strip().splitlines()[-1], err
        assert f"telegram {call} failed" in said[0] and "can this host reach 127.0.0.1:" in said[0]
        assert token not in err

    wrong = https.replace(closed, f'base_url = "{tg_api.base_url}"\n')  # the fake refuses this token: 401
    (tmp_path / "wrong.toml").write_text(wrong)
    code, err = await _telegram(tmp_path / "wrong.toml", "set-webhook")
    said = _said(err)
    assert code == 2 and len(said) == 1 and "check telegram.bot_token" in said[0], err
    assert token not in err and "A" * 35 not in err
