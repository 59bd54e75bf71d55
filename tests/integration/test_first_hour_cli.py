"""The first hour at the command line, as a new user meets it: real subprocesses, real files."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from gateway.testing import TEST_SECRET
from tests.integration.test_cli import run
from tests.procs import free_port, write_config

pytestmark = pytest.mark.subprocess  # every test here starts a process


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path / "gw.toml", f"sqlite:///{tmp_path / 'gw.db'}", free_port())


def test_a_busy_port_is_one_line_exit_2_and_touches_nothing(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = write_config(tmp_path / "gw.toml", f"sqlite:///{tmp_path / 'gw.db'}", port)
        out = run("--config", str(config), "serve", cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and f"server.port {port} is in use" in lines[0], out.stderr
    assert "gateway ready" not in out.stderr + out.stdout
    assert not (tmp_path / "gw.db").exists()  # nothing opened, migrated or scheduled


def test_serve_port_moves_the_printed_links_too(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")}
    with subprocess.Popen(
        [sys.executable, "-m", "gateway", "serve", "--dev", "--port", str(port)],  # --dev after the subcommand
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stderr is not None
            deadline = time.monotonic() + 30
            line = ""
            while time.monotonic() < deadline and "web inbox: sign in" not in line:
                line = proc.stderr.readline()
            assert f"http://127.0.0.1:{port}/login/link/" in line, line
        finally:
            proc.terminate()
            proc.wait(timeout=20)


def test_commands_without_a_config_say_what_to_do(tmp_path: Path) -> None:
    out = run("approvals", "list", cwd=tmp_path)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "security.secret_keys" in out.stderr and "hitl-gateway init" in out.stderr and "--dev" in out.stderr
    hashed = subprocess.run(
        [sys.executable, "-m", "gateway", "web", "hash-password"],
        cwd=tmp_path,
        input="a long passphrase\n",
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("HITL_")},
        timeout=60,
    )
    assert hashed.returncode == 0 and hashed.stdout.startswith("scrypt$"), hashed.stderr  # needs no keys


def test_a_typo_in_an_environment_override_stops_the_start(config: Path, tmp_path: Path) -> None:
    out = run("--config", str(config), "check-config", cwd=tmp_path, env={"HITL_SERVER_PROT": "9000"})
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "HITL_SERVER_PROT" in out.stderr and "HITL_SERVER_PORT" in out.stderr


def test_global_options_after_the_subcommand(config: Path, tmp_path: Path) -> None:
    out = run("check-config", "--config", str(config), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["security"]["secret_keys"] == [f"***({len(TEST_SECRET)} chars)"]
    assert run("approvals", "list", f"--config={config}", cwd=tmp_path).returncode == 0


def test_tables_are_aligned_and_a_closed_pipe_exits_quietly(config: Path, tmp_path: Path) -> None:
    code = (
        "import asyncio\n"
        "from gateway.config import load_settings\n"
        "from gateway.runtime import Runtime\n"
        "from gateway.service import SuspendRequest\n"
        "async def main():\n"
        f"    rt = Runtime(load_settings({str(config)!r}, env={{}}))\n"
        "    await rt.start(background=False)\n"
        "    for i in range(400):\n"
        "        await rt.service.suspend(SuspendRequest(run_id=f'run-{i}' * (1 + i % 3), step='s', title=f'T{i}'))\n"
        "    await rt.stop()\n"
        "asyncio.run(main())\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120, capture_output=True)
    listed = run("--config", str(config), "approvals", "list", "--limit", "20", cwd=tmp_path).stdout.splitlines()
    assert listed[0].split() == ["ID", "STATUS", "TITLE", "AGE", "RUN/STEP"]
    starts = [listed[0].index(h) for h in ("STATUS", "TITLE", "AGE", "RUN/STEP")]
    for line in listed[1:]:  # every column starts where its header does
        assert all(line[i - 1] == " " and line[i] != " " for i in starts), listed
    env = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")}
    argv = [sys.executable, "-m", "gateway", "--config", str(config), "approvals", "list", "--limit", "400"]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.readline()
        proc.stdout.close()  # `| head -1`
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 0 and "Traceback" not in err and "BrokenPipe" not in err, err


def test_approvals_show_has_cards_deliveries_job_and_events(config: Path, tmp_path: Path) -> None:
    code = (
        "import asyncio\n"
        "from gateway.config import load_settings\n"
        "from gateway.runtime import Runtime\n"
        "from gateway.service import SuspendRequest\n"
        "async def main():\n"
        f"    rt = Runtime(load_settings({str(config)!r}, env={{}}))\n"
        "    await rt.start(background=False)\n"
        "    a, _ = await rt.service.suspend(SuspendRequest(run_id='r', step='s', title='Ship it'))\n"
        "    print(a.id)\n"
        "    await rt.stop()\n"
        "asyncio.run(main())\n"
    )
    approval_id = subprocess.run(
        [sys.executable, "-c", code], check=True, timeout=60, capture_output=True, text=True
    ).stdout.strip()
    shown = json.loads(run("--config", str(config), "approvals", "show", approval_id, "--json", cwd=tmp_path).stdout)
    assert {"cards", "deliveries", "resume_job", "events", "reminders"} <= set(shown)
    summary = run("--config", str(config), "approvals", "show", approval_id, cwd=tmp_path).stdout.splitlines()
    assert summary[0] == f"{approval_id}  waiting_approval  Ship it" and len(summary) < 20  # for people: id first
    assert any(line.split() == ["card", "web:", "done"] for line in summary), summary
    assert [c["channel"] for c in shown["cards"]] == ["web"] and shown["deliveries"][0]["kind"] == "post"


def _http(method: str, url: str, key: str | None = None, body: dict[str, object] | None = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data, headers, method=method), timeout=5) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def test_init_then_every_command_works_without_dev(tmp_path: Path) -> None:
    """`init` writes a 0600 production-shaped config with fresh keys, never over a file; then
    `check-config`, `serve` and the other commands work with no --dev: the agent key suspends,
    the operator key decides."""
    out = run("init", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "hitl-gateway check-config" in out.stdout and "hitl-gateway serve" in out.stdout
    config = tmp_path / "hitl-gateway.toml"
    assert oct(config.stat().st_mode & 0o777) == "0o600"
    before = config.read_bytes()
    again = run("init", cwd=tmp_path)
    assert again.returncode == 2 and "never overwrites" in again.stderr and config.read_bytes() == before
    assert run("check-config", cwd=tmp_path).returncode == 0
    keys = tomllib.loads(before.decode())["security"]
    agent, operator = keys["agents"]["my-agent"], keys["operators"]["me"]
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")} | {"HITL_SERVER_PORT": str(port)}
    argv = [sys.executable, "-m", "gateway", "serve"]
    with subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(400):
                try:
                    if _http("GET", f"{base}/healthz")[0] == 200:
                        break
                except OSError:
                    time.sleep(0.05)
            status, body = _http("POST", f"{base}/v1/suspend", agent, {"run_id": "r-1", "step": "pay", "title": "Pay"})
            assert status == 201, body
            status, view = _http("POST", f"{base}/v1/approvals/{body['id']}/decision", operator, {"outcome": "approve"})
            assert status == 200 and view["decision"]["decided_by"] == "operator:me", view
            listed = run("approvals", "list", "--status", "approved", cwd=tmp_path)
            assert listed.returncode == 0 and body["id"] in listed.stdout
        finally:
            proc.terminate()
            proc.wait(timeout=20)


def test_dev_ignores_the_config_in_the_checkout_and_says_so(tmp_path: Path) -> None:
    """`init` in the checkout, then `make run` (`--dev`): the dev world, its keys and operator,
    never the file's; one line says the file is ignored. An explicit --config is still read."""
    assert run("init", cwd=tmp_path).returncode == 0
    out = run("--dev", "check-config", cwd=tmp_path, env={"HITL_CONFIG": "hitl-gateway.toml"})
    assert out.returncode == 0, out.stderr
    security = json.loads(out.stdout)["security"]
    assert security["operators"] == {"dev": "***"} and security["agents"] == {"dev": "***"}
    said = [line for line in out.stderr.splitlines() if "ignores" in line]
    assert said == ["hitl-gateway: --dev ignores hitl-gateway.toml (run without --dev to use it)"], out.stderr
    named = run("--dev", "--config", "hitl-gateway.toml", "check-config", cwd=tmp_path)
    assert named.returncode == 0 and "ignores" not in named.stderr
    assert "me" in json.loads(named.stdout)["security"]["operators"]
    plain = run("check-config", cwd=tmp_path)  # without --dev the file is the config, as before
    assert json.loads(plain.stdout)["security"]["operators"] == {"me": "***"}
