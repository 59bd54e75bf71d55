"""`hitl-gateway telegram poll` as a real process against the fake Bot API."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from gateway.core.models import Status
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.testing import TEST_SECRET, make_settings
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.telegram.conftest import ALICE, CHAT, TG, TOKEN

pytestmark = pytest.mark.subprocess  # every test here starts a process


async def test_poll_command_decides_a_press(tmp_path: Path, tg_api: FakeTelegramAPI) -> None:
    db = f"sqlite:///{tmp_path / 'poll.db'}"
    telegram = {"bot_token": TOKEN, "base_url": tg_api.base_url, "approvers": [ALICE]}
    settings = make_settings(db, {"telegram": telegram})
    rt = Runtime(settings, owner="test")
    await rt.start(background=False)
    approval, _ = await rt.service.suspend(SuspendRequest("run-p", "pay", "Pay", channels=(f"telegram:{CHAT}",)))
    await rt.outbox.drain()
    await rt.stop()
    mid = max(m for (_, m) in tg_api.messages)
    helper = TG(rt, None, tg_api, None)  # type: ignore[arg-type]
    tg_api.updates.append(helper.press(ALICE, helper.data(mid, "Approve"), mid))

    config = tmp_path / "gw.toml"
    config.write_text(
        f'[store]\nurl = "{db}"\n[security]\nsecret_keys = ["{TEST_SECRET}"]\n'
        f'[telegram]\nbot_token = "{TOKEN}"\nbase_url = "{tg_api.base_url}"\napprovers = [{ALICE}]\n'
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gateway",
        "--config",
        str(config),
        "telegram",
        "poll",
        "--timeout",
        "1",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        await tg_api.wait_for_call("answerCallbackQuery", 30)
        await tg_api.wait_for_call("editMessageText", 10)
    finally:
        proc.terminate()
        _, err = await proc.communicate()
    assert tg_api.calls_to("deleteWebhook"), err.decode()
    assert [c.params["text"] for c in tg_api.calls_to("answerCallbackQuery")] == ["Approved"]
    assert "Approved" in tg_api.message(CHAT, mid)["text"]  # the poller's outbox synced the card
    rt = Runtime(settings, owner="test")
    await rt.start(background=False)
    try:
        assert (await rt.service.get(approval.id)).status is Status.APPROVED
    finally:
        await rt.stop()
