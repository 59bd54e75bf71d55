"""A real `hitl-gateway serve` subprocess on a SQLite file, for the benchmarks and the chaos run."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from tests.procs import wait_ready

API_KEY = "bench-api-key-0123456789abcdef"
ROOT = Path(__file__).resolve().parents[1]
SECRET = "bench-secret-key-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
OPERATOR_KEY = "bench-operator-key-0123456789abcdef"
OPERATOR = {"Authorization": f"Bearer {OPERATOR_KEY}"}  # API decisions need an operator


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_config(
    workdir: Path,
    db: Path,
    port: int,
    log_level: str = "WARNING",
    extra: str = "",
    store_url: str | None = None,
    operator: bool = True,
) -> Path:
    """A TOML config: one agent key, one operator key, a `fast` policy and an `agent` worker (command `true`)."""
    cfg = workdir / "gateway.toml"
    cfg.write_text(
        f"""
[server]
host = "127.0.0.1"
port = {port}
public_url = "http://127.0.0.1:{port}"
log_level = "{log_level}"

[store]
url = "{store_url or f"sqlite:///{db}"}"

[security]
secret_keys = ["{SECRET}"]
api_keys = ["{API_KEY}"]
{f'operators = {{ bench = "{OPERATOR_KEY}" }}' if operator else ""}

[policies.default]
timeout = "30m"
on_timeout = "reject"

[policies.fast]
timeout = "1m"

[workers.agent]
command = ["true"]
{extra}
"""
    )
    return cfg


@dataclass
class Gateway:
    """One gateway process. `start()` waits for /readyz; `kill()` is SIGKILL (no clean-up)."""

    workdir: Path
    db: Path
    log_level: str = "WARNING"
    extra_config: str = ""
    store_url: str | None = None  # default: sqlite:///{db}
    root: Path = ROOT  # the tree whose `gateway` package runs (bench.ab: another checkout)
    operator: bool = True  # bench.ab: off, so that trees from before [security.operators] start too
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        cfg = write_config(
            self.workdir, self.db, self.port, self.log_level, self.extra_config, self.store_url, self.operator
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")}
        # entrypoint workers import bench.* and examples.* from the repository root
        # (and the tree's own SDK first: an A/B of an older tree runs its own worker-side code)
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(self.root), str(self.root / "sdk"), env.get("PYTHONPATH")])
        )
        log = (self.workdir / "gateway.log").open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gateway", "--config", str(cfg), "serve"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=self.workdir,
        )
        asyncio.run(self._wait_ready(timeout))

    async def _wait_ready(self, within: float) -> None:
        async with aiohttp.ClientSession() as http:
            alive = lambda: self.proc is not None and self.proc.poll() is None  # noqa: E731
            await wait_ready(http, self.url, alive, within=within, log=self.workdir / "gateway.log")

    def rss_kb(self) -> int:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS line")

    def cpu_seconds(self) -> float:
        """User + system CPU time of the serving process so far (all its threads)."""
        assert self.proc is not None
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def kill(self) -> None:
        """SIGKILL, as a crash would: no shutdown hook runs."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
