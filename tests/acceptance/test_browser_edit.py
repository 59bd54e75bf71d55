"""The edit form in real headless Chromium, with JavaScript off: a real `hitl-gateway serve`,
a value the server refuses shown inline with what was typed kept, then an approval with changes.
The screenshot of the form is docs/img/edit-form.png (copied when $WEB_SCREENSHOTS_DIR is set)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import aiohttp
import pytest

from tests.acceptance.test_browser import ARGS, AUTH, CHROMIUM
from tests.acceptance.test_browser import gateway as gateway  # the serve subprocess fixture
from tests.web.conftest import PASSWORD

pytestmark = pytest.mark.subprocess
SCHEMA = {
    "type": "object",
    "properties": {
        "amount_cents": {
            "type": "integer",
            "minimum": 1,
            "maximum": 5000,
            "multipleOf": 100,
            "description": "in cents, whole euros only",
        },
        "currency": {"enum": ["EUR", "USD", "GBP"]},
        "memo": {"type": "string"},
        "send_receipt": {"type": "boolean"},
    },
}


async def test_edit_in_the_browser_without_javascript(gateway: str, tmp_path: Path) -> None:
    from playwright.async_api import async_playwright, expect

    body = {
        "run_id": "invoice-2291",
        "step": "charge",
        "title": "Charge ACME $42",
        "summary": "Monthly invoice",
        "args": {"customer": "ACME", "amount_cents": 4200, "currency": "EUR", "memo": "May", "send_receipt": True},
        "args_schema": SCHEMA,
        "editable": ["amount_cents", "currency", "memo", "send_receipt"],
    }
    async with aiohttp.ClientSession(headers=AUTH) as http, http.post(f"{gateway}/v1/suspend", json=body) as resp:
        assert resp.status == 201, await resp.text()
        approval_id = (await resp.json())["id"]
    shot = tmp_path / "edit-form.png"
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            context = await browser.new_context(java_script_enabled=False, viewport={"width": 1000, "height": 760})
            page = await context.new_page()
            await page.goto(f"{gateway}/login")
            await page.get_by_label("Name").fill("alice")
            await page.get_by_label("Password").fill(PASSWORD)
            await page.get_by_role("button", name="Sign in").click()
            await page.goto(f"{gateway}/approvals/{approval_id}")
            amount = page.get_by_label("amount_cents")
            await expect(amount).to_have_value("4200")
            await amount.fill("3950")  # within min/max (the browser checks those), not a multiple of 100
            await page.get_by_role("button", name="Approve").click()
            alert = page.get_by_role("alert")
            await expect(alert).to_contain_text("args.amount_cents: 3950 is not a multiple of 100")
            await expect(page.get_by_label("amount_cents")).to_have_value("3950")  # kept
            await expect(page.get_by_label("amount_cents")).to_have_attribute("aria-invalid", "true")
            # the form (below the args it decides on), its inline error, the typed value
            await page.locator("section.decide").screenshot(path=tmp_path / "edit-page.png")
            await page.get_by_label("amount_cents").fill("3900")
            await page.get_by_label("currency").select_option("USD")
            await page.get_by_label("memo").fill("May, less the credit note")
            await page.locator("fieldset.edit-args").screenshot(path=shot)
            await page.get_by_role("button", name="Approve").click()
            await expect(page.get_by_role("heading", name="Inbox")).to_be_visible()  # nothing else waits
            await page.goto(f"{gateway}/approvals/{approval_id}")
            await expect(page.get_by_role("heading", name=re.compile(r"Outcome: approved"))).to_be_visible()
            await expect(page.locator("#change")).to_contain_text(
                "Approved with changes by web:alice: amount_cents 4200 → 3900, currency EUR → USD, memo May → May, less"
            )
        finally:
            await browser.close()
    async with aiohttp.ClientSession(headers=AUTH) as http, http.get(f"{gateway}/v1/approvals/{approval_id}") as resp:
        view = await resp.json()
    assert view["status"] == "approved"
    assert view["decision"]["args"] == {
        **body["args"],
        "amount_cents": 3900,
        "currency": "USD",
        "memo": "May, less the credit note",
    }
    assert shot.stat().st_size > 5000
    target = os.environ.get("WEB_SCREENSHOTS_DIR")
    if target:
        shutil.copy(tmp_path / "edit-page.png", Path(target) / "edit-form.png")
