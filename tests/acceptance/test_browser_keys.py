"""The keyboard in real headless Chromium, against a real `hitl-gateway serve`: `?` shows the
help, `j`/`k` move through the inbox, `x` selects, `a` approves the selection together, `r`
rejects the current row, and on an approval page `e` goes to the edit fields and `a` approves.
Keys typed into a field stay the field's. The script is a static file: the page's CSP holds
(no violation is reported)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.acceptance.test_browser import ARGS, CHROMIUM, _need_browser
from tests.procs import AUTH, Gateway, free_port, write_config
from tests.web.conftest import HASH, PASSWORD

pytestmark = pytest.mark.subprocess


async def _suspend(http: aiohttp.ClientSession, base: str, step: str, **over: Any) -> str:
    body = {"run_id": "inv-1", "step": step, "title": f"Pay {step}", "args": {"amount": 4200}, **over}
    async with http.post(f"{base}/v1/suspend", json=body, headers=AUTH) as resp:
        assert resp.status == 201, await resp.text()
        return str((await resp.json())["id"])


async def _status(http: aiohttp.ClientSession, base: str, approval_id: str) -> str:
    async with http.get(f"{base}/v1/approvals/{approval_id}", headers=AUTH) as resp:
        return str((await resp.json())["status"])


async def test_the_inbox_and_the_approval_page_work_from_the_keyboard(tmp_path: Path) -> None:
    _need_browser()
    from playwright.async_api import async_playwright, expect

    port = free_port()
    extra = f'[web]\napprovers = ["alice"]\npasswords = {{ alice = "{HASH}" }}\n'
    gw = Gateway(
        write_config(tmp_path / "gw.toml", f"sqlite:///{tmp_path / 'gw.db'}", port, extra), port, tmp_path / "gw.log"
    )
    gw.start()
    try:
        async with aiohttp.ClientSession() as http:
            one, two, three = [await _suspend(http, gw.url, s) for s in ("one", "two", "three")]
            async with async_playwright() as pw:
                browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
                try:
                    page = await browser.new_page()
                    problems: list[str] = []
                    # a CSP violation is a console error; a missing page is seen by its response
                    # (Chromium's own favicon.ico request is not the page's: it is left out)
                    page.on(
                        "console",
                        lambda m: (
                            problems.append(m.text)
                            if m.type == "error" and not m.text.startswith("Failed to load resource")
                            else None
                        ),
                    )
                    page.on("pageerror", lambda e: problems.append(str(e)))
                    page.on("response", lambda r: problems.append(f"{r.status} {r.url}") if r.status == 404 else None)
                    await page.goto(f"{gw.url}/login")
                    await page.get_by_label("Name").fill("alice")
                    await page.get_by_label("Password").fill(PASSWORD)
                    await page.get_by_role("button", name="Sign in").click()
                    await expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
                    await page.wait_for_load_state()  # keys.js is deferred: the heading can show before it runs

                    await page.keyboard.press("?")
                    help_box = page.get_by_role("dialog", name="Keyboard shortcuts")
                    await expect(help_box).to_be_visible()
                    await expect(help_box).to_contain_text("next / previous approval")
                    await page.keyboard.press("Escape")
                    await expect(help_box).to_be_hidden()

                    rows = page.locator("tr[data-row]")
                    await page.keyboard.press("j")
                    await expect(rows.nth(0)).to_have_class(re.compile("cursor"))
                    await page.keyboard.press("j")
                    await page.keyboard.press("j")
                    await page.keyboard.press("j")  # stays on the last
                    await expect(rows.nth(2)).to_have_class(re.compile("cursor"))
                    await page.keyboard.press("k")
                    await expect(rows.nth(1)).to_have_class(re.compile("cursor"))
                    await expect(rows.nth(2)).not_to_have_class(re.compile("cursor"))

                    # a key typed into the comment field is text, not a decision
                    await page.get_by_label("Comment").fill("")
                    await page.get_by_label("Comment").press_sequentially("all ok")
                    await expect(page.get_by_label("Comment")).to_have_value("all ok")
                    assert await _status(http, gw.url, one) == "waiting_approval"
                    await page.locator("h1").click()  # leave the field

                    await page.keyboard.press("k")  # back to the first row
                    await page.keyboard.press("x")
                    await page.keyboard.press("j")
                    await page.keyboard.press("x")
                    await expect(page.locator(f'input[name="pick:{one}"]')).to_be_checked()
                    await expect(page.locator(f'input[name="pick:{two}"]')).to_be_checked()
                    await expect(page.locator(f'input[name="pick:{three}"]')).not_to_be_checked()
                    await page.keyboard.press("a")  # approves the two selected, together
                    await expect(page.get_by_role("heading", name="Approved: 2 of 2")).to_be_visible()
                    assert [await _status(http, gw.url, i) for i in (one, two, three)] == [
                        "approved",
                        "approved",
                        "waiting_approval",
                    ]

                    await page.wait_for_load_state()  # the results page's keys.js
                    await page.keyboard.press("j")  # the one left
                    await page.keyboard.press("r")  # nothing selected: rejects the current row
                    await expect(page.get_by_role("heading", name="Rejected: 1 of 1")).to_be_visible()
                    assert await _status(http, gw.url, three) == "rejected"

                    four = await _suspend(http, gw.url, "four", editable=["amount"])
                    five = await _suspend(http, gw.url, "five")
                    await page.goto(f"{gw.url}/")
                    await page.keyboard.press("j")
                    await page.keyboard.press("o")  # opens the current row
                    await expect(page).to_have_url(f"{gw.url}/approvals/{four}")
                    await page.wait_for_load_state()  # the URL changes before the new page's keys.js runs
                    await page.keyboard.press("j")  # the approval page: the next one waiting
                    await expect(page).to_have_url(f"{gw.url}/approvals/{five}")
                    await page.wait_for_load_state()
                    await page.keyboard.press("k")  # and back
                    await expect(page).to_have_url(f"{gw.url}/approvals/{four}")
                    await page.wait_for_load_state()  # keys.js is deferred: the page's keys come with it
                    await page.keyboard.press("e")  # to the edit fields
                    focused = await page.evaluate("document.activeElement.closest('fieldset.edit-args') !== null")
                    assert focused, "e did not move the focus into the edit fields"
                    await page.keyboard.press("a")  # typed into the field: not an approval
                    assert await _status(http, gw.url, four) == "waiting_approval"
                    await page.locator("h1").click()
                    await page.reload()  # the typed field is not what gets approved here
                    await page.keyboard.press("a")  # approved, and on to the next one waiting
                    await expect(page).to_have_url(f"{gw.url}/approvals/{five}?after={four}")
                    assert await _status(http, gw.url, four) == "approved"
                    assert not problems, problems
                finally:
                    await browser.close()
    finally:
        gw.stop()
