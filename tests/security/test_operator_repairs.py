"""The repairs added beside the decisions, attacked: an agent's key extends nothing and sends no
outbound event again (with or without the `extensions` it saw), an operator's resend cannot be
aimed at a URL instead of a configured webhook, and the `extensions` an extend names never gets
past the policy's `max_extensions`. Against the real app on a SQLite file, nothing changes on a
refusal."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.settings import Settings
from gateway.testing import FakeClock
from tests.conftest import AUTH, OPERATOR
from tests.helpers import table_counts

Client = TestClient[Any, Any]
SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()


@pytest.fixture
def settings(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory(
        policies={"roomy": {"timeout": "1h", "extend": ["1h"], "max_extensions": 2}},
        events={"webhooks": [{"name": "ops", "url": "https://hooks.example.org/hitl", "secret": SECRET}]},
        web={"approvers": ["alice"]},
    )


@pytest.fixture
async def rt(settings: Settings, clock: FakeClock) -> Runtime:
    return Runtime(settings, clock=clock, owner="test")


@pytest.fixture
async def api(aiohttp_client: Callable[..., Any], settings: Settings, rt: Runtime) -> AsyncIterator[Client]:
    yield await aiohttp_client(create_app(settings, runtime=rt, background=False))


async def _suspend(rt: Runtime) -> str:
    return (await rt.service.suspend(SuspendRequest("run-1", "charge", "Charge", policy="roomy")))[0].id


async def test_an_agent_key_extends_nothing_and_sends_no_event_again(api: Client, rt: Runtime) -> None:
    aid = await _suspend(rt)
    before = await table_counts(rt)
    for path, body in (
        ("extend", {"duration": "1h"}),
        ("extend", {"duration": "1h", "extensions": 0}),
        ("events/resend", {}),
        ("events/resend", {"webhook": "ops"}),
    ):
        resp = await api.post(f"/v1/approvals/{aid}/{path}", json=body, headers=AUTH)
        assert resp.status == 403 and (await resp.json())["error"]["code"] == "operator_required", (path, body)
    assert await table_counts(rt) == before
    assert (await rt.service.get(aid)).extensions == 0


@pytest.mark.parametrize(
    "webhook", ["https://attacker.example/collect", "http://127.0.0.1:6379/", "ops ", "OPS", "../ops", "ops\n"]
)
async def test_a_resend_is_aimed_at_configured_webhooks_only(api: Client, rt: Runtime, webhook: str) -> None:
    aid = await _suspend(rt)
    before = await table_counts(rt)
    resp = await api.post(f"/v1/approvals/{aid}/events/resend", json={"webhook": webhook}, headers=OPERATOR)
    error = (await resp.json())["error"]
    assert resp.status == 400 and error["details"]["field"] == "webhook", error
    assert "attacker" not in error["message"] and "6379" not in error["message"]  # the input is not echoed back
    assert await table_counts(rt) == before


async def test_the_extensions_seen_never_get_past_max_extensions(api: Client, rt: Runtime) -> None:
    aid = await _suspend(rt)
    url = f"/v1/approvals/{aid}/extend"
    for seen in (0, 1):
        resp = await api.post(url, json={"duration": "1h", "extensions": seen}, headers=OPERATOR)
        assert resp.status == 200, await resp.text()
    before = await table_counts(rt)
    for seen in (2, 0, 1000):  # the truth, an old page, a made-up count
        resp = await api.post(url, json={"duration": "1h", "extensions": seen}, headers=OPERATOR)
        assert resp.status in (403, 409), (seen, await resp.text())
    for seen in (-1, 1001, "2", None, [2]):
        resp = await api.post(url, json={"duration": "1h", "extensions": seen}, headers=OPERATOR)
        assert resp.status in (400, 403), (seen, await resp.text())  # None is "not given": the policy says no
    assert await table_counts(rt) == before
    assert (await rt.service.get(aid)).extensions == 2
