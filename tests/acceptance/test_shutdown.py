"""SIGTERM always ends a `serve`, within server.shutdown_timeout + 5 s, and closes its store:
even when its loops have failed, a close hangs, or a non-daemon thread would hold the
interpreter's exit (the SQLite engine's threads are daemons, and the watchdog ends the rest)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest

from tests.procs import free_port, wait_ready, write_config

pytestmark = pytest.mark.subprocess
SHUTDOWN = 1.0  # server.shutdown_timeout


def _start(tmp_path: Path, mode: str) -> tuple[subprocess.Popen[bytes], Path, int]:
    port = free_port()
    config = write_config(tmp_path / "gw.toml", f"sqlite:///{tmp_path / 'gw.db'}", port)
    text = config.read_text().replace("[server]\n", f'[server]\nshutdown_timeout = "{SHUTDOWN:g}s"\n', 1)
    config.write_text(text)
    log = tmp_path / "gw.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")}
    cmd = [sys.executable, "-m", "tests.fakes.failing_serve", mode, "--config", str(config), "serve"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=Path.cwd())
    return proc, log, port


async def _sigterm_and_time(tmp_path: Path, mode: str) -> tuple[int, float, str]:
    proc, log, port = _start(tmp_path, mode)
    try:
        async with aiohttp.ClientSession() as http:
            await wait_ready(http, f"http://127.0.0.1:{port}", lambda: proc.poll() is None, path="/healthz", log=log)
        await asyncio.sleep(0.5)  # the loops fail meanwhile
        proc.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        code = await asyncio.to_thread(proc.wait, SHUTDOWN + 10)
        return code, time.monotonic() - sent, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def test_sigterm_ends_a_gateway_whose_loops_failed(tmp_path: Path) -> None:
    code, took, log = await _sigterm_and_time(tmp_path, "failed")
    assert "this loop failed" in log  # they did fail
    assert code == 0, log
    assert took < SHUTDOWN + 5, f"exited {took:.1f}s after SIGTERM"
    assert (tmp_path / "gw.db.lock").read_text() == ""  # the store was closed: its serve lock let go


async def test_sigterm_ends_a_gateway_that_something_holds_up(tmp_path: Path) -> None:
    code, took, log = await _sigterm_and_time(tmp_path, "stuck")
    assert code == 70, log  # the watchdog's exit: shutdown overran
    assert "shutdown did not finish within 6s; exiting anyway" in log
    assert "closing the worker failed at shutdown: TimeoutError" in log
    assert took < SHUTDOWN + 5 + 1.5, f"exited {took:.1f}s after SIGTERM"
    assert (tmp_path / "gw.db.lock").read_text() == ""  # the store was closed all the same
