"""kill -9 against a real `hitl-gateway serve` process: nothing acknowledged is lost."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from tests.conftest import suspend_body
from tests.procs import AUTH, Gateway, call, free_port, write_config

pytestmark = pytest.mark.subprocess  # every test here starts a process


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    port = free_port()
    config = write_config(tmp_path / "gw.toml", f"sqlite:///{tmp_path / 'gw.db'}", port)
    gw = Gateway(config, port, tmp_path / "gw.log")
    yield gw
    gw.stop()


async def test_sigkill_after_suspend_loses_nothing(gateway: Gateway) -> None:
    gateway.start()
    async with aiohttp.ClientSession() as http:
        acked = []
        for i in range(20):
            status, body = await call(
                http, "POST", f"{gateway.url}/v1/suspend", json=suspend_body(run_id=f"run-{i}"), headers=AUTH
            )
            assert status == 201
            acked.append(body)
        gateway.kill9()
        gateway.start()
        for body in acked:
            status, doc = await call(http, "GET", f"{gateway.url}/v1/resume/{body['resume_token']}")
            assert status == 200 and doc["status"] == "waiting_approval" and doc["state"] == {"cursor": 3}
        # the same suspend after the restart is still idempotent
        status, again = await call(
            http, "POST", f"{gateway.url}/v1/suspend", json=suspend_body(run_id="run-0"), headers=AUTH
        )
        assert status == 200 and again == acked[0]
        status, decided = await call(
            http, "POST", f"{gateway.url}/v1/resume", json={"token": acked[0]["resume_token"], "outcome": "approve"}
        )
        assert status == 200 and decided["status"] == "approved"


async def test_sigkill_during_a_burst_of_decisions(gateway: Gateway) -> None:
    """Every decision the client saw acknowledged survives a kill -9 in the middle of the burst."""
    gateway.start()
    async with aiohttp.ClientSession() as http:
        tokens = []
        for i in range(40):
            _, body = await call(
                http, "POST", f"{gateway.url}/v1/suspend", json=suspend_body(run_id=f"b-{i}"), headers=AUTH
            )
            tokens.append(body["resume_token"])
        acked: list[str] = []

        async def decide(token: str) -> None:
            try:
                status, _ = await call(
                    http, "POST", f"{gateway.url}/v1/resume", json={"token": token, "outcome": "approve"}
                )
            except (TimeoutError, aiohttp.ClientError):
                return
            if status == 200:
                acked.append(token)

        tasks = [asyncio.create_task(decide(t)) for t in tokens]
        await asyncio.sleep(0.02)
        gateway.kill9()
        await asyncio.gather(*tasks)
        gateway.start()
        for token in tokens:
            status, doc = await call(http, "GET", f"{gateway.url}/v1/resume/{token}")
            assert status == 200
            if token in acked:
                assert doc["status"] == "approved"
            assert doc["status"] in ("approved", "waiting_approval")


async def test_sigterm_is_graceful(gateway: Gateway) -> None:
    gateway.start()
    async with aiohttp.ClientSession() as http:
        status, _ = await call(http, "POST", f"{gateway.url}/v1/suspend", json=suspend_body(), headers=AUTH)
        assert status == 201
    assert gateway.terminate() == 0
    assert "Traceback" not in gateway.log.read_text()
