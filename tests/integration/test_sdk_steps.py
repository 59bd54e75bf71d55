"""DurableRun.step against the real journal endpoints: replay, retries, timeouts, auth."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from gateway.core.keys import idempotency_key
from gateway.core.models import StepStatus
from gateway.sdk import DurableRun, GatewayClient, GatewayHTTPError, HttpJournal, StepTimeout, TransientError
from gateway.service import SuspendRequest
from gateway.testing import FakeClock
from tests.conftest import TEST_AGENT
from tests.integration.gateway_fixture import API_KEY, start_env


@pytest.fixture
async def env(
    aiohttp_server: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock, tmp_path: Path
) -> Any:
    return await start_env(aiohttp_server, settings_factory, clock, tmp_path)


async def test_step_journals_once_and_replays(env: Any) -> None:
    calls: list[int] = []

    async def effect(n: int, *, scale: int) -> dict[str, Any]:
        calls.append(n)
        return {"value": n * scale, "t": (1, 2)}

    for _ in range(2):
        async with await DurableRun.open("r1", gateway_url=env.url, api_key=API_KEY) as run:
            assert await run.step("one", effect, 2, scale=10) == {"value": 20, "t": [1, 2]}
    assert calls == [2]
    (step,) = await env.rt.store.get_steps("r1", namespace=TEST_AGENT)
    assert (step.name, step.status, step.attempts) == ("one", StepStatus.SUCCEEDED, 1)
    assert step.finished_at >= step.started_at


async def test_display_view_of_the_journal_is_redacted(env: Any) -> None:
    async with await DurableRun.open("r5", gateway_url=env.url, api_key=API_KEY) as run:
        await run.step("lookup", lambda: {"email": "jane@example.com"})
        raw = await run.client.request("GET", "/v1/runs/r5/steps")  # type: ignore[union-attr]
        shown = await run.client.request("GET", "/v1/runs/r5/steps?view=display")  # type: ignore[union-attr]
    assert raw["items"][0]["output"] == {"email": "jane@example.com"}
    assert shown["items"][0]["output"] == {"email": "[redacted:email]"}


async def test_transient_errors_retry_terminal_errors_propagate(env: Any) -> None:
    attempts: list[str] = []

    def flaky() -> str:
        attempts.append("x")
        if len(attempts) < 3:
            raise TransientError("busy")
        return "ok"

    def broken() -> None:
        raise ValueError("bad")

    async with await DurableRun.open("r2", gateway_url=env.url, api_key=API_KEY) as run:
        run.retry_base = 0.01
        assert await run.step("flaky", flaky) == "ok"
        with pytest.raises(ValueError):
            await run.step("broken", broken)
        with pytest.raises(TransientError):
            await run.step("hopeless", lambda: (_ for _ in ()).throw(TransientError("x")), max_attempts=2)
        with pytest.raises(StepTimeout):
            await run.step("slow", asyncio.sleep, 5, timeout=0.2)
    steps = {s.name: s for s in await env.rt.store.get_steps("r2", namespace=TEST_AGENT)}
    assert set(steps) == {"flaky"} and steps["flaky"].attempts == 3


async def test_http_429_and_5xx_are_transient(aiohttp_server: Callable[..., Any], env: Any) -> None:
    replies = [503, 429, 200]

    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"n": len(replies)}, status=replies.pop(0))

    app = web.Application()
    app.router.add_get("/", handler)
    server = await aiohttp_server(app)
    async with await DurableRun.open("r3", gateway_url=env.url, api_key=API_KEY) as run:
        run.retry_base = 0.01
        client = GatewayClient(f"http://127.0.0.1:{server.port}")
        assert await run.step("call", client.request, "GET", "/") == {"n": 1}
        await client.close()


async def test_idempotency_key_is_deterministic(env: Any) -> None:
    async with await DurableRun.open("r4", gateway_url=env.url, api_key=API_KEY) as run:
        key = run.idempotency_key("charge", {"b": 1, "a": [1, 2]})
        assert key == run.idempotency_key("charge", {"a": [1, 2], "b": 1})
        assert key == idempotency_key("r4", "charge", {"a": [1, 2], "b": 1})
        assert key != run.idempotency_key("charge", {"a": [1, 2], "b": 2})


async def test_journal_endpoints_accept_only_that_runs_token(env: Any) -> None:
    approval, _ = await env.rt.service.suspend(SuspendRequest(run_id="mine", step="s", title="t"))
    token = env.rt.service.resumes.resume_token(approval)
    mine = HttpJournal(GatewayClient(env.url, resume_token=token))
    assert await mine.load("mine") == {}
    with pytest.raises(GatewayHTTPError) as err:
        await mine.load("other")
    assert err.value.status == 401
    anonymous = HttpJournal(GatewayClient(env.url))
    with pytest.raises(GatewayHTTPError) as err:
        await anonymous.load("mine")
    assert err.value.status == 401
    forged = HttpJournal(GatewayClient(env.url, resume_token=token[:-2] + "xx"))
    with pytest.raises(GatewayHTTPError):
        await forged.load("mine")
    async with GatewayClient(env.url, API_KEY) as client:
        with pytest.raises(GatewayHTTPError) as err:
            await client.record_step("mine", "s", {"started_at": "yesterday", "finished_at": "now"})
        assert (err.value.status, err.value.code) == (400, "validation_error")
    for journal in (mine, anonymous, forged):
        await journal.client.close()


async def test_every_route_is_in_openapi(env: Any) -> None:
    async with GatewayClient(env.url) as client:
        spec = await client.request("GET", "/openapi.json")
    for path, method in [
        ("/v1/jobs", "get"),
        ("/v1/approvals/{id}/retry", "post"),
        ("/v1/runs/{run_id}/steps", "get"),
        ("/v1/runs/{run_id}/steps/{name}", "put"),
    ]:
        assert method in spec["paths"][path]
