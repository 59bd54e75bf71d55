"""Real `hitl-gateway serve` subprocesses for crash and restart tests."""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp

from gateway.testing import TEST_API_KEY, TEST_OPERATOR_KEY, TEST_SECRET

AUTH = {"Authorization": f"Bearer {TEST_API_KEY}"}
OPERATOR = {"Authorization": f"Bearer {TEST_OPERATOR_KEY}"}


def _port_block() -> Iterator[int]:
    """This pytest-xdist worker's own block of ports, below the kernel's ephemeral range: a port
    the kernel hands out (`bind(0)`) can be handed out again, to the other worker's client
    sockets too, before the subprocess that was told to use it binds it (a flaky "in use")."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    base = 20000 + (int(worker) if worker.isdigit() else 0) % 4 * 3000
    start = random.randrange(3000)
    return itertools.cycle([base + (start + i) % 3000 for i in range(3000)])


_PORTS = _port_block()


def free_port() -> int:
    """A port nothing listens on, never handed out twice in a row by this worker."""
    for port in _PORTS:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("unreachable: the cycle never ends")


def write_config(path: Path, db_url: str, port: int, extra: str = "") -> Path:
    path.write_text(
        f"""
[server]
host = "127.0.0.1"
port = {port}
public_url = "http://127.0.0.1:{port}"

[store]
url = "{db_url}"

[security]
secret_keys = ["{TEST_SECRET}"]
api_keys = ["{TEST_API_KEY}"]
operators = {{ test = "{TEST_OPERATOR_KEY}" }}
token_decisions = true
{extra}
"""
    )
    return path


def _healthy(port: int) -> bool:
    """The gateway answers /healthz. A connect alone is not enough: `serve` binds its socket
    before the store is open (a busy port must fail first), so the kernel accepts connections
    that wait in the backlog until the runtime has started."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
            conn.sendall(b"GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            conn.settimeout(0.5)
            return conn.recv(16).split(b" ")[1:2] == [b"200"]  # 'HTTP/1.x 200 OK'
    except OSError:
        return False


class Gateway:
    """One `python -m gateway serve` process."""

    def __init__(self, config: Path, port: int, log: Path, env: dict[str, str] | None = None) -> None:
        self.config, self.port, self.log = config, port, log
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")} | (env or {})
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 20) -> Gateway:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "gateway", "--config", str(self.config), "serve"],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gateway exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            if _healthy(self.port):
                return self
            time.sleep(0.05)
        self.kill9()  # never leave a half-started gateway behind the failed test
        raise TimeoutError(f"gateway did not listen: {self.log.read_text()[-2000:]}")

    def kill9(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def terminate(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(20)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill9()


async def call(session: aiohttp.ClientSession, method: str, url: str, **kw: Any) -> tuple[int, Any]:
    async with session.request(method, url, **kw) as resp:
        return resp.status, await resp.json()


async def run_cli(config: Path, *args: str) -> tuple[int, str]:
    """`python -m gateway --config CONFIG ARGS...` with no HITL_* from the environment; (exit code, output)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gateway",
        "--config",
        str(config),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={k: v for k, v in os.environ.items() if not k.startswith("HITL_")},
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode()


async def wait_ready(
    http: aiohttp.ClientSession,
    url: str,
    alive: Callable[[], bool],
    *,
    within: float = 20.0,
    path: str = "/readyz",
    log: Path | None = None,
) -> None:
    """Poll `url + path` until it answers 200. Fails at once if `alive()` turns false (the
    process exited), or after `within` seconds; with the tail of `log` when given."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive():
            raise RuntimeError(f"the gateway at {url} exited before it was ready{_tail(log)}")
        try:
            async with http.get(url + path) as resp:
                if resp.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.05)
    raise TimeoutError(f"the gateway at {url} was not ready within {within:.0f} s{_tail(log)}")


def _tail(log: Path | None) -> str:
    return "" if log is None or not log.exists() else ":\n" + log.read_text()[-2000:]
