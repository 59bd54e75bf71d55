"""End to end in real headless Chromium: a real `hitl-gateway serve`, sign in, approve, see the
outcome, and the card gets its sync. Screenshots land in the test's tmp dir (and in
$WEB_SCREENSHOTS_DIR when set, which is how docs/img is refreshed)."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from gateway.store.sqlite import SQLiteStore
from gateway.testing import TEST_API_KEY, TEST_SECRET
from tests.procs import free_port
from tests.web.conftest import HASH, PASSWORD, journal

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
AUTH = {"Authorization": f"Bearer {TEST_API_KEY}"}
pytestmark = pytest.mark.subprocess


def _need_browser() -> None:
    why = None
    if not Path(CHROMIUM).exists():
        why = f"{CHROMIUM} is missing (make test installs it with apt-get when run as root)"
    else:
        try:
            import playwright.async_api  # noqa: F401
        except ImportError:
            why = "the playwright package is not installed (pip extra: dev)"
    if why and os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but the browser test cannot run: {why}")
    if why:
        pytest.skip(why)


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[str]:
    """A real `hitl-gateway serve` subprocess on a free port."""
    _need_browser()
    port = free_port()
    db = tmp_path / "gateway.db"
    config = tmp_path / "hitl-gateway.toml"
    config.write_text(
        f'[server]\nport = {port}\npublic_url = "http://127.0.0.1:{port}"\n'
        f'[store]\nurl = "sqlite:///{db}"\n'
        f'[security]\nsecret_keys = ["{TEST_SECRET}"]\napi_keys = ["{TEST_API_KEY}"]\n'
        f'[web]\napprovers = ["alice"]\npasswords = {{ alice = "{HASH}" }}\n'
        '[policies.fast]\ntimeout = "5m"\non_timeout = "approve"\n'
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


async def _seed(base: str, db: Path) -> str:
    """Some approvals over the API and some journal steps; returns the id to approve."""
    bodies: list[dict[str, Any]] = [
        {
            "run_id": "invoice-2291",
            "step": "charge",
            "title": "Charge ACME $42",
            "summary": "Monthly invoice",
            "args": {"customer": "ACME", "amount_cents": 4200},
        },
        {
            "run_id": "deploy-17",
            "step": "deploy",
            "title": "Deploy api v2.3 to prod",
            "policy": "fast",
            "args": {"service": "api", "version": "2.3.0"},
        },
        {"run_id": "mail-5", "step": "send", "title": "Email 1,204 customers", "args": {"template": "renewal"}},
    ]
    async with aiohttp.ClientSession(headers=AUTH) as http:
        ids = []
        for body in bodies:
            async with http.post(f"{base}/v1/suspend", json=body) as resp:
                assert resp.status == 201, await resp.text()
                ids.append((await resp.json())["id"])
    store = SQLiteStore(str(db))
    await store.open()
    try:
        rows = (("invoice-2291", "fetch_invoice", 3, 1.2), ("deploy-17", "build", 1, 42.0))
        rows += (("deploy-17", "fetch_invoice", 2, 0.8), ("mail-5", "render", 1, 3.5))
        await journal(store, datetime.now(UTC) - timedelta(minutes=20), rows)
    finally:
        await store.close()
    return str(ids[0])


async def _card_synced(base: str, approval_id: str) -> dict[str, Any]:
    async with aiohttp.ClientSession(headers=AUTH) as http:
        for _ in range(100):
            async with http.get(f"{base}/v1/approvals/{approval_id}") as resp:
                view: dict[str, Any] = await resp.json()
            syncs = [d for d in view["deliveries"] if d["kind"] == "sync"]
            if syncs and all(d["status"] == "done" for d in syncs):
                return view
            await asyncio.sleep(0.1)
    pytest.fail(f"no synced card: {view['deliveries']}")


async def test_sign_in_approve_and_see_the_card_synced(gateway: str, tmp_path: Path) -> None:
    from playwright.async_api import async_playwright, expect

    approval_id = await _seed(gateway, tmp_path / "gateway.db")
    shots = tmp_path / "shots"
    shots.mkdir()
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = await browser.new_page(viewport={"width": 1000, "height": 620})
            await page.goto(f"{gateway}/")
            await expect(page).to_have_url(f"{gateway}/login")
            await page.get_by_label("Name").fill("alice")
            await page.get_by_label("Password").fill(PASSWORD)
            await page.get_by_role("button", name="Sign in").click()
            await expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
            await expect(page.get_by_text("3 approvals, oldest first")).to_be_visible()
            await page.screenshot(path=shots / "inbox.png")
            await page.get_by_role("link", name="Charge ACME $42").click()
            amount = page.locator("table.args tr", has=page.get_by_role("rowheader", name="amount_cents"))
            await expect(amount.locator(".v")).to_have_text("4200")
            await page.get_by_label("Comment (optional)").fill("Invoice checked")
            await page.get_by_role("button", name="Approve").focus()  # keyboard, not mouse
            await page.keyboard.press("Enter")
            await expect(page.get_by_role("status")).to_contain_text("Decided: Charge ACME $42 (approved)")
            await page.get_by_role("status").get_by_role("link").click()  # on to the next; back to this one
            await expect(page.get_by_role("heading", name=re.compile(r"Outcome: approved"))).to_be_visible()
            await expect(page.get_by_text("Invoice checked")).to_be_visible()
            await page.screenshot(path=shots / "approved.png", full_page=True)
            await page.get_by_role("link", name="Dashboard").click()
            await expect(page.get_by_role("heading", name="Steps with the most retries")).to_be_visible()
            await page.screenshot(path=shots / "dashboard.png")
        finally:
            await browser.close()
    view = await _card_synced(gateway, approval_id)
    assert view["status"] == "approved" and view["decision"]["decided_by"] == "web:alice"
    assert [(c["channel"], c["status"]) for c in view["cards"]] == [("web", "done")]
    for name in ("inbox.png", "approved.png", "dashboard.png"):
        assert (shots / name).stat().st_size > 5000
    target = os.environ.get("WEB_SCREENSHOTS_DIR")
    if target:
        for name in ("inbox.png", "dashboard.png"):
            shutil.copy(shots / name, Path(target) / name)
