"""Every card shows a business-hours deadline in the calendar's time zone: the web page (over real
HTTP), the e-mail card and reminder, and the chat cards (Telegram, Slack, Discord, Teams)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from aiohttp.test_utils import TestClient

from adapters.discord import render as discord
from adapters.email import render as email
from adapters.slack import render as slack
from adapters.teams import render as teams
from adapters.telegram import render as telegram
from gateway.config import Settings
from gateway.core.calendar import parse_calendar
from gateway.core.models import Approval, Outcome, Policy
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.testing import FakeClock, make_approval
from tests.web.conftest import HASH, sign_in

BERLIN = ZoneInfo("Europe/Berlin")
FRIDAY_5PM = datetime(2026, 12, 4, 17, 0, tzinfo=BERLIN)
OFFICE = parse_calendar("office", {"timezone": "Europe/Berlin", "hours": "Mon-Fri 09:00-18:00"})
SHOWN = "Mon 2026-12-07 12:00 CET"  # Friday 17:00 + 4 business hours, in Berlin
FOUR_HOURS = timedelta(hours=4)
LINKS = {Outcome.APPROVE: "https://hitl.test/a", Outcome.REJECT: "https://hitl.test/r"}


def office_approval() -> Approval:
    policy = Policy(name="office", timeout=FOUR_HOURS, calendar=OFFICE)
    return make_approval(policy, FRIDAY_5PM)


def test_the_deadline_is_four_business_hours_later() -> None:
    assert office_approval().deadline == datetime(2026, 12, 7, 12, 0, tzinfo=BERLIN)


def test_email_card_and_reminder() -> None:
    a = office_approval()
    card = email.card(a, "hitl@test", "alice@test", LINKS)
    text = card.get_body(("plain",))
    html = card.get_body(("html",))
    assert text is not None and html is not None
    assert f"Deadline: {SHOWN}" in text.get_content() and f"Deadline: {SHOWN}" in html.get_content()
    nudge = email.reminder(a, "hitl@test", "alice@test", LINKS, 1).get_body(("plain",))
    assert nudge is not None and f"before {SHOWN}" in nudge.get_content()


def test_email_card_without_a_calendar_stays_in_utc() -> None:
    a = make_approval(Policy(timeout=FOUR_HOURS), FRIDAY_5PM)
    text = email.card(a, "hitl@test", "alice@test", LINKS).get_body(("plain",))
    assert text is not None and "Deadline: 2026-12-04 20:00 UTC" in text.get_content()


def test_telegram_card() -> None:
    a = office_approval()
    assert SHOWN in telegram.render_card(a, FRIDAY_5PM)


def test_slack_card_and_reminder_add_the_calendar_time_to_the_readers_own() -> None:
    a = office_approval()
    blocks = json.dumps(slack.card_blocks(a, "ref"), ensure_ascii=False)
    assert a.deadline is not None and f"<!date^{int(a.deadline.timestamp())}^" in blocks
    assert f"({SHOWN})" in blocks
    assert f"({SHOWN})" in slack.reminder_text(a)


def test_discord_and_teams_cards() -> None:
    a = office_approval()
    fields = discord.embed(a)["fields"]
    deadline = next(f["value"] for f in fields if f["name"] == "Deadline")
    assert deadline.endswith(f"({SHOWN})")
    card = json.dumps(teams.card(a, teams.View(ref="r")), ensure_ascii=False)
    assert f"Deadline {SHOWN}" in card
    assert SHOWN in teams.reminder(a)["text"]


@pytest.fixture
def cal_settings(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory(
        web={"approvers": ["alice"], "passwords": {"alice": HASH}},
        workers={"agent": {"command": ["true"]}},
        calendars={"office": {"timezone": "Europe/Berlin", "hours": "Mon-Fri 09:00-18:00"}},
        policies={"office": {"timeout": "4h", "calendar": "office"}},
    )


@pytest.fixture
async def web(
    aiohttp_client: Callable[..., Any], cal_settings: Settings
) -> AsyncIterator[tuple[TestClient[Any, Any], Runtime]]:
    rt = Runtime(cal_settings, clock=FakeClock(FRIDAY_5PM), owner="test")
    app = create_app(cal_settings, runtime=rt, background=False)
    yield await aiohttp_client(app), rt


async def test_the_web_page_shows_the_deadline_in_the_calendar_zone(
    web: tuple[TestClient[Any, Any], Runtime],
) -> None:
    client, rt = web
    approval, _ = await rt.service.suspend(SuspendRequest("run-1", "pay", "Pay ACME", policy="office"))
    await sign_in(client)
    resp = await client.get(f"/approvals/{approval.id}")
    assert resp.status == 200
    html = await resp.text()
    assert f'due <span class="due">{SHOWN}</span>' in html
    assert "office: 4h of office business hours, then reject" in html
    inbox = await (await client.get("/")).text()
    assert "4h of office business hours" in inbox
