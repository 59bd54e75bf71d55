"""kill -9 right after the ack: the press is not lost, and the card sync still happens.

A real gateway subprocess (SystemClock, real HTTP) talks to the fake Slack. The fake holds
`chat.update`, so the process dies with the sync in flight; a new process finishes it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import pytest

from adapters.slack.parse import make_ref
from gateway.core.models import Status
from gateway.core.tokens import TokenSigner
from gateway.runtime import Runtime
from gateway.testing import TEST_API_KEY, TEST_SECRET, FakeClock, make_settings
from tests.conftest import AUTH, suspend_body
from tests.fakes.slack_api import BOT_TOKEN, SIGNING_SECRET, FakeSlack, block_actions, signed
from tests.fakes.slack_socket import APP_TOKEN
from tests.procs import free_port, wait_ready
from tests.slack.conftest import CARDS, PATH, slack_section

pytestmark = pytest.mark.subprocess


@pytest.fixture
def gateway_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    yield {
        **{k: v for k, v in os.environ.items() if not k.startswith("HITL_")},
        "HITL_STORE_URL": f"sqlite:///{tmp_path / 'crash.db'}",
        "HITL_SECURITY_SECRET_KEYS": TEST_SECRET,
        "HITL_SECURITY_API_KEYS": TEST_API_KEY,
        "HITL_SLACK_BOT_TOKEN": BOT_TOKEN,
        "HITL_SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "HITL_SLACK_APPROVERS": "UALICE",
        "HITL_SLACK_CHANNELS": CARDS,
        "HITL_SERVER_LOG_LEVEL": "WARNING",
    }


async def _until(predicate: Callable[[], object]) -> None:
    async with asyncio.timeout(10):
        while True:
            if predicate():
                return
            await asyncio.sleep(0.02)


async def test_press_survives_kill_9_right_after_the_ack(fake_slack: FakeSlack, gateway_env: dict[str, str]) -> None:
    port = free_port()
    env = {**gateway_env, "HITL_SLACK_BASE_URL": fake_slack.base_url, "HITL_SERVER_PORT": str(port)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "serve", env=env, stdout=asyncio.subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    release = fake_slack.hold("chat.update")
    try:
        async with aiohttp.ClientSession() as http:
            await wait_ready(http, url, lambda: proc.returncode is None, path="/healthz")
            body = suspend_body(channels=[f"slack:{CARDS}"])
            async with http.post(f"{url}/v1/suspend", json=body, headers=AUTH) as r:
                assert r.status == 201
                aid = (await r.json())["id"]
            await _until(lambda: fake_slack.calls_to("chat.postMessage", ok_only=True))
            ref = make_ref(TokenSigner([TEST_SECRET]), aid)
            payload = block_actions("UALICE", f"hitl:approve:{ref}", ref, response_url=fake_slack.response_url("a"))
            body, headers = signed(payload, time.time())
            async with http.post(f"{url}{PATH}", data=body, headers=headers) as r:
                assert r.status == 200
            await fake_slack.wait_arrived("chat.update")  # the slow work is in flight
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert fake_slack.calls_to("chat.update") == []  # the dead process never got a reply
    release.set()
    await asyncio.sleep(0.05)
    before = len(fake_slack.calls_to("chat.update"))

    # A new process on the same database: the decision is there, and the sync is finished.
    settings = make_settings(env["HITL_STORE_URL"], {"slack": slack_section(fake_slack, approvers=["UALICE"])})
    clock = FakeClock(datetime.now(UTC) + timedelta(minutes=10))  # past the dead process's lease
    rt = Runtime(settings, clock=clock, owner="restarted")
    await rt.start(background=False)
    try:
        approval = await rt.service.get(aid)
        assert approval.status is Status.APPROVED and approval.decision is not None
        assert approval.decision.decided_by == "slack:UALICE"
        await rt.outbox.drain()
        updates = fake_slack.calls_to("chat.update")
        assert len(updates) == before + 1
        assert all(b["type"] != "actions" for b in updates[-1]["blocks"])
        assert len(fake_slack.calls_to("chat.postMessage")) == 1  # the card was not posted twice
    finally:
        await rt.stop()


async def test_socket_mode_ack_comes_after_the_commit_kill_9(
    fake_slack: FakeSlack, gateway_env: dict[str, str]
) -> None:
    """Over Socket Mode: the envelope is acked, the process is killed at once, and the decision
    is there. Slack sends the envelope again to the next process: it records nothing twice."""
    env = {k: v for k, v in gateway_env.items() if k != "HITL_SLACK_SIGNING_SECRET"}
    env |= {"HITL_SLACK_BASE_URL": fake_slack.base_url, "HITL_SLACK_APP_TOKEN": APP_TOKEN}
    sockets = fake_slack.sockets

    async def serve() -> tuple[asyncio.subprocess.Process, str]:
        port = free_port()
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway", "serve", env={**env, "HITL_SERVER_PORT": str(port)}
        )
        return proc, f"http://127.0.0.1:{port}"

    first, url = await serve()
    try:
        async with aiohttp.ClientSession() as http:
            await wait_ready(http, url, lambda: first.returncode is None, path="/healthz")
            await sockets.wait_connected(opened=1)
            async with http.post(
                f"{url}/v1/suspend", json=suspend_body(channels=[f"slack:{CARDS}"]), headers=AUTH
            ) as r:
                assert r.status == 201
                aid = (await r.json())["id"]
        ref = make_ref(TokenSigner([TEST_SECRET]), aid)
        payload = block_actions("UALICE", f"hitl:approve:{ref}", ref, response_url=fake_slack.response_url("a"))
        envelope = await sockets.send(payload)
        await sockets.ack(envelope)
        first.send_signal(signal.SIGKILL)
        await first.wait()
        second, url = await serve()
        try:
            await sockets.wait_connected(opened=2)
            await sockets.send(payload, envelope_id=envelope)  # the ack was "lost": sent again
            await sockets.ack(envelope, nth=2)
        finally:
            second.send_signal(signal.SIGTERM)
            await second.wait()
    finally:
        if first.returncode is None:
            first.kill()
            await first.wait()
    settings = make_settings(env["HITL_STORE_URL"], {"slack": slack_section(fake_slack, approvers=["UALICE"])})
    rt = Runtime(settings, clock=FakeClock(datetime.now(UTC)), owner="check")
    await rt.store.open()
    try:
        approval = await rt.service.get(aid)
        assert approval.status is Status.APPROVED and approval.decision is not None
        kinds = [e.kind for e in await rt.store.list_events(aid)]
        assert kinds.count("approved") == 1 and "duplicate_vote" not in kinds
    finally:
        await rt.store.close()
