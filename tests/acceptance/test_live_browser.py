"""The live web inbox in real headless Chromium: an approval page left open shows a decision
made elsewhere (a Telegram press on the fake Bot API, into a real `hitl-gateway serve`) without a
reload, and its SLA countdown ticks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.acceptance.test_browser import ARGS, CHROMIUM, _need_browser
from tests.fakes.telegram_api import FakeTelegramAPI, callback_update
from tests.procs import AUTH, Gateway, free_port, write_config
from tests.web.conftest import HASH, PASSWORD

pytestmark = pytest.mark.subprocess
TOKEN, SECRET, CHAT, ALICE_TG = "123456:LIVE-token", "live_secret-0123456789", -1009876543210, 111


async def test_an_open_page_shows_a_telegram_press_without_reloading(
    tmp_path: Path, aiohttp_server: Callable[..., Any]
) -> None:
    _need_browser()
    from playwright.async_api import async_playwright, expect

    api = FakeTelegramAPI(TOKEN)
    api.base_url = str((await aiohttp_server(api.app)).make_url("/bot"))
    port = free_port()
    extra = (
        f'[telegram]\nbot_token = "{TOKEN}"\nwebhook_secret = "{SECRET}"\nbase_url = "{api.base_url}"\n'
        f"approvers = [{ALICE_TG}]\nchats = [{CHAT}]\n"
        f'[web]\napprovers = ["alice"]\npasswords = {{ alice = "{HASH}" }}\n'
    )
    gw = Gateway(
        write_config(tmp_path / "gw.toml", f"sqlite:///{tmp_path / 'gw.db'}", port, extra), port, tmp_path / "gw.log"
    )
    gw.start()
    try:
        async with aiohttp.ClientSession() as http:
            body = {
                "run_id": "inv-7",
                "step": "charge",
                "title": "Charge ACME 42 EUR",
                "channels": ["web", f"telegram:{CHAT}"],
            }
            async with http.post(f"{gw.url}/v1/suspend", json=body, headers=AUTH) as resp:
                assert resp.status == 201, await resp.text()
                approval_id = (await resp.json())["id"]
            (post,) = await api.wait_for_call("sendMessage")
            message_id = max(m for (_, m) in api.messages)
            markup = post.params["reply_markup"]
            approve = next(
                b["callback_data"] for row in markup["inline_keyboard"] for b in row if "Approve" in b["text"]
            )

            async with async_playwright() as pw:
                browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
                try:
                    page = await browser.new_page()
                    await page.goto(f"{gw.url}/login")
                    await page.get_by_label("Name").fill("alice")
                    await page.get_by_label("Password").fill(PASSWORD)
                    await page.get_by_role("button", name="Sign in").click()
                    await page.goto(f"{gw.url}/approvals/{approval_id}")
                    countdown = page.locator("time[data-deadline]")
                    first = await countdown.text_content()
                    await expect(countdown).not_to_have_text(first or "", timeout=5000)  # it ticks
                    await page.evaluate("window.__notReloaded = true")

                    user = {"id": ALICE_TG, "is_bot": False, "first_name": "Alice"}
                    update = callback_update(7001, "q-7001", user, CHAT, message_id, approve)
                    headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
                    async with http.post(
                        f"{gw.url}/webhooks/telegram", data=json.dumps(update), headers=headers
                    ) as resp:
                        assert resp.status == 200

                    heading = page.get_by_role("heading", name="Outcome: approved", exact=True)
                    await expect(heading).to_be_visible(timeout=10_000)
                    await expect(page.get_by_text(f"telegram:{ALICE_TG}").first).to_be_visible()
                    assert await page.evaluate("window.__notReloaded === true")  # swapped in place
                    await expect(page.get_by_role("button", name="Approve")).to_have_count(0)
                finally:
                    await browser.close()
    finally:
        gw.stop()
        await asyncio.sleep(0)
