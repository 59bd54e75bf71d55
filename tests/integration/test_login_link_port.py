"""`hitl-gateway serve --port P` on a config without public_url: `web login-link` then prints a
link on P, which signs in; once that gateway has stopped, the config's port again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from gateway.testing import TEST_SECRET
from tests.procs import _healthy, free_port

pytestmark = pytest.mark.subprocess


def test_login_link_follows_serve_port(tmp_path: Path) -> None:
    configured, served = free_port(), free_port()
    config = tmp_path / "gw.toml"
    config.write_text(
        f'[server]\nport = {configured}\n[store]\nurl = "sqlite:///{tmp_path / "gw.db"}"\n'
        f'[security]\nsecret_keys = ["{TEST_SECRET}"]\n[web]\napprovers = ["alice"]\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")} | {"XDG_STATE_HOME": str(tmp_path)}
    gateway = [sys.executable, "-m", "gateway", "--config", str(config)]

    def login_link() -> str:
        done = subprocess.run(
            [*gateway, "web", "login-link", "alice"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*gateway, "serve", "--port", str(served)], stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp_path
        )
    try:
        deadline = time.monotonic() + 30
        while not _healthy(served):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.05)
        link = login_link()
        assert link.startswith(f"http://127.0.0.1:{served}/login/link/"), link
        with urllib.request.urlopen(link, timeout=10) as page:  # the link reaches that gateway
            assert page.status == 200 and "Continue as alice" in page.read().decode()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, log.read_text()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert login_link().startswith(f"http://127.0.0.1:{configured}/login/link/")  # that gateway is gone
