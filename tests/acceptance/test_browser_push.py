"""The inbox's push button in real headless Chromium, against a real `hitl-gateway serve`.

Headless Chromium has no push service, so `PushManager.subscribe` is replaced (an init script)
by one that answers what a browser would: the subscription of a browser the local push service
(tests/fakes/push_service.py) made, keys and all. The rest is real: the page's CSP, the service
worker's registration at the root scope, /static/push.js POSTing the subscription with the
page's CSRF token, the gateway pushing the next card to that endpoint (the push service checks
the VAPID JWT and decrypts it), and the push's Approve link deciding as alice.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from gateway.testing import TEST_API_KEY, TEST_SECRET
from tests.acceptance.test_browser import ARGS, AUTH, CHROMIUM, _need_browser
from tests.fakes.push_service import Browser, FakePushService
from tests.procs import free_port
from tests.web.conftest import HASH, PASSWORD
from tests.webpush.support import PRIVATE, PUBLIC, SUBJECT

pytestmark = pytest.mark.subprocess

_FAKE_SUBSCRIBE = """
(() => {
  const sub = %s;
  let current = null;
  const made = {
    endpoint: sub.endpoint,
    toJSON: () => ({ endpoint: sub.endpoint, keys: { p256dh: sub.p256dh, auth: sub.auth } }),
    unsubscribe: () => { current = null; return Promise.resolve(true); },
  };
  PushManager.prototype.subscribe = function (options) {
    window.__pushKey = Array.from(new Uint8Array(options.applicationServerKey));
    current = made;
    return Promise.resolve(made);
  };
  PushManager.prototype.getSubscription = function () { return Promise.resolve(current); };
})();
"""


@pytest.fixture
async def push_service() -> AsyncIterator[FakePushService]:
    service = FakePushService(lambda: datetime.now(UTC))
    runner = web.AppRunner(service.app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    service.origin = f"http://127.0.0.1:{port}"
    yield service
    await runner.cleanup()


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[str]:
    _need_browser()
    port = free_port()
    config = tmp_path / "hitl-gateway.toml"
    config.write_text(
        f'[server]\nport = {port}\npublic_url = "http://127.0.0.1:{port}"\n'
        f'[store]\nurl = "sqlite:///{tmp_path / "gateway.db"}"\n'
        f'[security]\nsecret_keys = ["{TEST_SECRET}"]\napi_keys = ["{TEST_API_KEY}"]\n'
        f'[web]\napprovers = ["alice"]\npasswords = {{ alice = "{HASH}" }}\n'
        f'[webpush]\npublic_key = "{PUBLIC}"\nprivate_key = "{PRIVATE}"\nsubject = "{SUBJECT}"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")}
    log = (tmp_path / "gateway.log").open("wb")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "--config", str(config), "serve", stdout=log, stderr=log, env=env
    )
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as http:
            for _ in range(100):
                try:
                    async with http.get(f"{base}/healthz") as resp:
                        if resp.status == 200:
                            break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.1)
            else:
                pytest.fail("the gateway did not start: " + (tmp_path / "gateway.log").read_text())
        yield base
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 15)
        log.close()
        assert PRIVATE not in (tmp_path / "gateway.log").read_text()


async def _pushed(phone: Browser) -> dict[str, object]:
    for _ in range(100):
        if phone.received:
            return phone.received[-1]
        await asyncio.sleep(0.1)
    pytest.fail("no push arrived")


async def test_subscribe_from_the_inbox_then_approve_from_the_push(gateway: str, push_service: FakePushService) -> None:
    from playwright.async_api import async_playwright, expect

    phone = push_service.browser(PUBLIC)
    errors: list[str] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            context = await browser.new_context()
            await context.add_init_script(_FAKE_SUBSCRIBE % json.dumps(phone.form()))
            page = await context.new_page()
            page.on(
                "console", lambda m: errors.append(f"{m.text} {m.location.get('url')}") if m.type == "error" else None
            )
            await page.goto(f"{gateway}/login")
            await page.get_by_label("Name").fill("alice")
            await page.get_by_label("Password").fill(PASSWORD)
            await page.get_by_role("button", name="Sign in").click()
            button = page.get_by_role("button", name="Notify this device")
            await expect(button).to_be_visible()  # the worker registered, within the CSP
            scope = await page.evaluate("navigator.serviceWorker.ready.then(r => r.scope)")
            assert scope == f"{gateway}/"
            await button.click()
            await expect(page.get_by_role("button", name="Stop notifications")).to_be_visible()
            key = await page.evaluate("window.__pushKey")
            assert bytes(key) == base64.urlsafe_b64decode(PUBLIC + "=")  # the gateway's VAPID key

            async with aiohttp.ClientSession(headers=AUTH) as http:
                body = {"run_id": "invoice-7", "step": "charge", "title": "Charge ACME $42"}
                async with http.post(f"{gateway}/v1/suspend", json=body) as resp:
                    approval_id = (await resp.json())["id"]
            push = await _pushed(phone)
            assert push["title"] == "Charge ACME $42"
            (approve,) = [a["url"] for a in push["actions"] if a["action"] == "approve"]  # type: ignore[attr-defined]
            await page.goto(approve)
            await page.get_by_role("button", name="Approve").click()
            await expect(page.get_by_role("heading", name="Approved")).to_be_visible()
        finally:
            await browser.close()
    assert [e for e in errors if not e.endswith("/favicon.ico")] == []  # no CSP violation, no failed request
    async with aiohttp.ClientSession(headers=AUTH) as http, http.get(f"{gateway}/v1/approvals/{approval_id}") as resp:
        view = await resp.json()
    assert view["status"] == "approved" and view["decision"]["decided_by"] == "web:alice"
