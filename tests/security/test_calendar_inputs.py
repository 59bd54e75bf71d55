"""An agent's bad business-hours input over HTTP: a clear 4xx naming the field, and nothing stored.

An agent may name a configured calendar in an inline policy, never set the calendar of an
operator's policy, and its deadline must leave some business time (a clock in the calendar's
hours, injected)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from aiohttp.test_utils import TestClient

from gateway.config import Settings
from gateway.http.app import create_app
from gateway.http.keys import RUNTIME
from gateway.runtime import Runtime
from gateway.testing import FakeClock
from tests.conftest import AUTH, suspend_body
from tests.helpers import table_counts

BERLIN = ZoneInfo("Europe/Berlin")
SATURDAY_NOON = datetime(2026, 12, 5, 12, 0, tzinfo=BERLIN)
Client = TestClient[Any, Any]


@pytest.fixture
async def api(aiohttp_client: Callable[..., Any], settings_factory: Callable[..., Settings]) -> AsyncIterator[Client]:
    settings = settings_factory(
        calendars={"office": {"timezone": "Europe/Berlin", "hours": "Mon-Fri 09:00-18:00"}},
        policies={
            "office": {"timeout": "4h", "calendar": "office", "agent_may_set": ["timeout"], "max_timeout": "1d"},
        },
    )
    rt = Runtime(settings, clock=FakeClock(SATURDAY_NOON), owner="t")
    yield await aiohttp_client(create_app(settings, runtime=rt, background=False))


async def _refused(api: Client, status: int, field: str, **over: Any) -> dict[str, Any]:
    rt: Runtime = api.server.app[RUNTIME]
    before = await table_counts(rt)
    resp = await api.post("/v1/suspend", json=suspend_body(**over), headers=AUTH)
    assert resp.status == status, await resp.text()
    error: dict[str, Any] = (await resp.json())["error"]
    assert error["message"].startswith(f"{field}:"), error
    assert await table_counts(rt) == before
    return error


@pytest.mark.parametrize(
    ("policy", "field", "words"),
    [
        ({"timeout": "4h", "calendar": "nope"}, "policy.calendar", "unknown calendar 'nope'"),
        ({"timeout": "4h", "calendar": {"timezone": "UTC", "hours": "Mon 09:00-17:00"}}, "policy.calendar", "must"),
        ({"timeout": "4h", "calendar": 7}, "policy.calendar", "must name a configured calendar"),
        ({"timeout": "3000h", "calendar": "office"}, "policy.timeout", "one year of its hours"),
        ({"timeout": "1h", "extend": ["3000h"], "calendar": "office"}, "policy.extend[0]", "one year"),
    ],
)
async def test_a_bad_inline_calendar_is_a_400(api: Client, policy: dict[str, Any], field: str, words: str) -> None:
    error = await _refused(api, 400, field, policy=policy)
    assert words in error["message"]


async def test_an_agent_cannot_change_the_operators_hours(api: Client) -> None:
    error = await _refused(api, 403, "policy.calendar", policy={"name": "office", "calendar": "office"})
    assert error["code"] == "policy_not_allowed"


async def test_a_deadline_needs_business_time_before_it(api: Client) -> None:
    sunday = datetime(2026, 12, 6, 12, 0, tzinfo=BERLIN).isoformat()
    error = await _refused(api, 400, "deadline", policy="office", deadline=sunday)
    assert "no business time" in error["message"]
    far = datetime(2046, 12, 7, 12, 0, tzinfo=BERLIN).isoformat()
    await _refused(api, 400, "deadline", policy="office", deadline=far)


async def test_a_deadline_in_the_hours_is_kept(api: Client) -> None:
    monday = datetime(2026, 12, 7, 12, 0, tzinfo=BERLIN)
    resp = await api.post("/v1/suspend", json=suspend_body(policy="office", deadline=monday.isoformat()), headers=AUTH)
    assert resp.status == 201, await resp.text()
    body = await resp.json()
    assert datetime.fromisoformat(body["deadline"]) == monday
