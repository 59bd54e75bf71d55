"""The one real-time SLA test: a `hitl-gateway serve` process with a 2 s SLA is SIGKILLed while
the deadlines pass; two processes are restarted at once on the SQLite file. One of them serves,
the other is refused with one line (one serving process per file: sqlite/serve_lock.py), and
each timeout fires exactly once."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from gateway.testing import TEST_API_KEY, TEST_SECRET
from tests.procs import free_port, wait_ready

AUTH = {"Authorization": f"Bearer {TEST_API_KEY}"}
pytestmark = pytest.mark.subprocess


def write_config(tmp: Path, port: int) -> Path:
    path = tmp / f"gw-{port}.toml"
    path.write_text(
        f"""
[server]
host = "127.0.0.1"
port = {port}
public_url = "http://127.0.0.1:{port}"
shutdown_timeout = "1s"
[store]
url = "sqlite:///{tmp / "gateway.db"}"
[security]
secret_keys = ["{TEST_SECRET}"]
api_keys = ["{TEST_API_KEY}"]
[policies.quick]
timeout = "2s"
on_timeout = "reject"
"""
    )
    return path


class Gateway:
    def __init__(self, tmp: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (tmp / f"gw-{self.port}.log").open("wb")
        env = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")}
        cmd = [sys.executable, "-m", "gateway", "--config", str(write_config(tmp, self.port)), "serve"]
        self.proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=self.log, stderr=subprocess.STDOUT)

    async def wait_ready(self, session: aiohttp.ClientSession) -> None:
        await wait_ready(session, self.url, lambda: self.proc.poll() is None, within=30)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.log.close()


async def get(session: aiohttp.ClientSession, url: str) -> Any:
    async with session.get(url, headers=AUTH) as resp:
        assert resp.status == 200, await resp.text()
        return await resp.json()


async def test_timeouts_fire_exactly_once_after_sigkill_and_racing_restarts(tmp_path: Path) -> None:
    async with aiohttp.ClientSession() as session:
        first = Gateway(tmp_path)
        try:
            await first.wait_ready(session)
            ids, deadlines = [], []
            for n in range(10):
                body = {"run_id": f"run-{n}", "step": "pay", "title": "Pay", "policy": "quick"}
                async with session.post(f"{first.url}/v1/suspend", json=body, headers=AUTH) as resp:
                    assert resp.status == 201, await resp.text()
                    body = await resp.json()
                    ids.append(body["id"])
                    deadlines.append(datetime.fromisoformat(body["deadline"]))
        finally:
            first.kill()  # SIGKILL before the 2 s deadlines
        killed_at = datetime.now(UTC)
        assert killed_at < deadlines[-1], "the suspends were too slow: the deadlines passed before the kill"
        await asyncio.sleep(2.3)  # the deadlines pass while the gateway is down
        a, b = Gateway(tmp_path), Gateway(tmp_path)  # two restarts on one file race at start
        try:
            ready = await asyncio.gather(a.wait_ready(session), b.wait_ready(session), return_exceptions=True)
            served = [g for g, r in zip((a, b), ready, strict=True) if r is None]
            refused = [g for g, r in zip((a, b), ready, strict=True) if r is not None]
            assert len(served) == 1 and len(refused) == 1, ready
            assert refused[0].proc.wait(10) == 2
            log = (tmp_path / f"gw-{refused[0].port}.log").read_text()
            assert "store_in_use: another hitl-gateway serve (pid " in log and "Traceback" not in log, log
            live = served[0]
            for _ in range(200):
                views = [await get(session, f"{live.url}/v1/approvals/{i}") for i in ids]
                if all(v["status"] == "timed_out" for v in views):
                    break
                await asyncio.sleep(0.05)
            assert [v["status"] for v in views] == ["timed_out"] * len(ids)
            assert {v["decision"]["decided_by"] for v in views} == {"policy"}
            await asyncio.sleep(0.3)  # let a late loser finish, if there were one
            for approval_id in ids:
                events = (await get(session, f"{live.url}/v1/approvals/{approval_id}/events"))["items"]
                assert [e["kind"] for e in events].count("timed_out") == 1
        finally:
            a.kill()
            b.kill()
