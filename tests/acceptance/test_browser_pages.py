"""The approval page, the run page and the inbox in real headless Chromium, at a phone's size
(390x844) and a desktop's: a real `hitl-gateway serve` with a real worker. At 390 px no page
scrolls sideways, the decision form is reachable, an approval with changes shows the value that
ran, the decision goes on to the next approval waiting, and the run page shows the worker's
output. The screenshots are docs/img/{inbox,approval,run}-{phone,desktop}.png (copied there when
$WEB_SCREENSHOTS_DIR is set)."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.acceptance.test_browser import ARGS, CHROMIUM, _need_browser
from tests.procs import AUTH, Gateway, free_port, write_config
from tests.web.conftest import HASH, PASSWORD

pytestmark = pytest.mark.subprocess
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}
WORKER = """\
import json, sys
doc = json.load(sys.stdin)
args = (doc.get("decision") or {}).get("args") or doc.get("approval", {}).get("args") or {}
print(f"charging {args.get('customer')} {args.get('amount')} {args.get('currency')}")
print("charged: transaction 991 accepted")
"""
SUMMARY = (
    "Monthly invoice **INV-2291** for ACME, as [agreed](https://example.com/contracts/acme).\n\n"
    "- 12 seats at 350 EUR\n- less the credit note of May\n"
)


async def _seed(base: str) -> dict[str, str]:
    bodies: list[dict[str, Any]] = [
        {
            "run_id": "invoice-2291",
            "step": "charge",
            "title": "Charge ACME 4200 EUR",
            "summary": SUMMARY,
            "args": {"customer": "ACME", "amount": 4200, "currency": "EUR", "invoice": "INV-2291"},
            "editable": ["amount"],
            "worker": "charge",
        },
        {"run_id": "deploy-17", "step": "deploy", "title": "Deploy api v2.3 to prod", "args": {"version": "2.3.0"}},
        {"run_id": "mail-5", "step": "send", "title": "Email 1,204 customers", "args": {"template": "renewal"}},
    ]
    ids: dict[str, str] = {}
    start = datetime.now(UTC) - timedelta(minutes=5)
    async with aiohttp.ClientSession(headers=AUTH) as http:
        for name, attempts, secs in (("fetch_invoice", 3, 1.2), ("check_credit", 1, 0.4)):
            step = {"status": "succeeded", "attempts": attempts, "output": {"ok": True}}
            step |= {"started_at": start.isoformat(), "finished_at": (start + timedelta(seconds=secs)).isoformat()}
            async with http.put(f"{base}/v1/runs/invoice-2291/steps/{name}", json=step) as resp:
                assert resp.status == 200, await resp.text()
            start += timedelta(seconds=secs + 1)
        for body in bodies:
            async with http.post(f"{base}/v1/suspend", json=body) as resp:
                assert resp.status == 201, await resp.text()
                ids[body["run_id"]] = (await resp.json())["id"]
    return ids


async def _job_done(base: str, approval_id: str) -> None:
    job: dict[str, Any] = {}
    async with aiohttp.ClientSession(headers=AUTH) as http:
        for _ in range(200):
            async with http.get(f"{base}/v1/jobs") as resp:
                jobs = (await resp.json())["items"]
            job = next((j for j in jobs if j["approval_id"] == approval_id), {})
            if job.get("status") in ("succeeded", "failed"):
                assert job["status"] == "succeeded", job
                return
            await asyncio.sleep(0.1)
    pytest.fail(f"the resume job did not finish: {job}")


async def _no_sideways_scroll(page: Any) -> None:
    width = await page.evaluate("document.documentElement.scrollWidth")
    viewport = page.viewport_size["width"]
    wide = await page.evaluate(
        "Array.from(document.querySelectorAll('main *')).filter(e => e.getBoundingClientRect().right > "
        "document.documentElement.clientWidth + 1).slice(0, 3).map(e => e.tagName + '.' + e.className)"
    )
    assert width <= viewport, f"{page.url} is {width}px wide at {viewport}px: {wide}"


async def _sign_in(page: Any, base: str) -> None:
    await page.goto(f"{base}/login")
    await page.get_by_label("Name").fill("alice")
    await page.get_by_label("Password").fill(PASSWORD)
    await page.get_by_role("button", name="Sign in").click()


async def test_the_pages_at_phone_and_desktop_size(tmp_path: Path) -> None:
    _need_browser()
    from playwright.async_api import async_playwright, expect

    worker = tmp_path / "charge.py"
    worker.write_text(WORKER)
    port, db = free_port(), tmp_path / "gw.db"
    extra = (
        f'[web]\napprovers = ["alice"]\npasswords = {{ alice = "{HASH}" }}\n'
        f'[workers.charge]\ncommand = ["{sys.executable}", "{worker}"]\n'
    )
    gw = Gateway(write_config(tmp_path / "gw.toml", f"sqlite:///{db}", port, extra), port, tmp_path / "gw.log")
    gw.start()
    shots = tmp_path / "shots"
    shots.mkdir()
    try:
        ids = await _seed(gw.url)
        charge = ids["invoice-2291"]
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            try:
                desk = await (await browser.new_context(viewport=DESKTOP)).new_page()
                await _sign_in(desk, gw.url)
                await expect(desk.get_by_role("heading", name="Inbox")).to_be_visible()
                await desk.screenshot(path=shots / "inbox-desktop.png")
                await desk.goto(f"{gw.url}/approvals/{charge}")
                await expect(desk.locator(".summary strong")).to_have_text("INV-2291")  # Markdown
                await desk.screenshot(path=shots / "approval-desktop.png", full_page=True)

                phone_ctx = await browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
                phone = await phone_ctx.new_page()
                await _sign_in(phone, gw.url)
                await expect(phone.get_by_role("heading", name="Inbox")).to_be_visible()
                await _no_sideways_scroll(phone)
                await phone.screenshot(path=shots / "inbox-phone.png")
                await phone.get_by_role("link", name="Charge ACME 4200 EUR").click()
                await expect(phone.get_by_role("heading", name="Charge ACME 4200 EUR")).to_be_visible()
                await _no_sideways_scroll(phone)
                await phone.screenshot(path=shots / "approval-phone.png", full_page=True)
                approve = phone.locator('button[data-action="approve"]')
                await approve.scroll_into_view_if_needed()
                box = await approve.bounding_box()
                assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
                assert box["height"] >= 40  # a thumb's target
                await phone.get_by_label("amount").fill("3900")
                await approve.tap()

                # on to the next approval waiting, with a word on the one decided
                await expect(phone.get_by_role("heading", name="Deploy api v2.3 to prod")).to_be_visible()
                notice = phone.get_by_role("status")
                await expect(notice).to_contain_text("Decided: Charge ACME 3900 EUR (approved)")
                await notice.get_by_role("link").click()
                await expect(phone.get_by_role("heading", name="Outcome: approved", exact=True)).to_be_visible()
                title = phone.locator("h1")
                await expect(title.locator("ins")).to_have_text("3900")
                await expect(title.locator("del")).to_have_text("4200")
                amount = phone.locator("table.args tr.arg-changed")
                await expect(amount.locator(".v")).to_have_text("3900")
                await expect(amount.locator("del")).to_have_text("4200")
                await _no_sideways_scroll(phone)

                await _job_done(gw.url, charge)
                await phone.get_by_role("link", name="invoice-2291").click()
                await expect(phone.get_by_role("heading", name="Run invoice-2291")).to_be_visible()
                await expect(phone.locator("pre.output")).to_contain_text("charging ACME 3900 EUR")
                await expect(phone.locator("tr.step").first).to_contain_text("fetch_invoice")
                await expect(phone.get_by_role("link", name="Charge ACME 3900 EUR").first).to_be_visible()
                await _no_sideways_scroll(phone)
                await phone.screenshot(path=shots / "run-phone.png", full_page=True)

                await desk.goto(phone.url)
                await expect(desk.locator("pre.output")).to_contain_text("transaction 991")
                await desk.screenshot(path=shots / "run-desktop.png", full_page=True)
            finally:
                await browser.close()
    finally:
        gw.stop()
    names = [f"{p}-{s}.png" for p in ("inbox", "approval", "run") for s in ("phone", "desktop")]
    for name in names:
        assert (shots / name).stat().st_size > 5000, name
    target = os.environ.get("WEB_SCREENSHOTS_DIR")
    if target:
        for name in names:
            shutil.copy(shots / name, Path(target) / name)
    assert re.match(r"^[a-z0-9]+$", charge)
