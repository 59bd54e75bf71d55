"""docs/integrations.md "Run the examples", as a newcomer runs it: its own code blocks, as written.

In a fresh directory that holds the examples and a copy of sdk/ (pip builds in it): the install
block (a fresh virtualenv, the three extras installed by the documented `pip` lines; pip's cache
is allowed, so it costs ~40 s once the wheels are cached), the worker config the gateway block
writes, loaded by the gateway's own config loader, `make run` (`.venv/bin/hitl-gateway --dev
serve`, as tests/acceptance/test_readme.py checks) with that file, on a free port, the fake payment API at
`$HITL_PAYMENTS_URL`, then the run block for each example: start, a decision, the worker's run.

The payment API is moved off its default port through `HITL_PAYMENTS_URL` alone, given to the
gateway (its workers inherit it) and to the payment API: the charges landing there prove that the
workers follow the configured address."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.readme import ROOT, at_port, block
from tests.procs import free_port

pytestmark = pytest.mark.subprocess
DOC = ROOT / "docs" / "integrations.md"
VENV = Path(sys.executable).parent.parent
EXAMPLES = ("langgraph_agent", "openai_agents", "pydantic_ai_agent")


def _env(**extra: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("HITL_")} | extra


def _bash(code: str, cwd: Path, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", code],
        cwd=cwd,
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _get(url: str) -> dict[str, object] | None:
    try:
        with urllib.request.urlopen(url, timeout=1) as resp:
            found: dict[str, object] = json.loads(resp.read())
            return found
    except OSError:
        return None


def _wait(url: str, log: Path, within: float = 30) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if _get(url) is not None:
            return
        time.sleep(0.1)
    pytest.fail(f"{url} did not answer: {log.read_text()[-3000:] if log.exists() else ''}")


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """A checkout as the docs' commands see it; the processes it starts are stopped after."""
    (tmp_path / ".venv").symlink_to(VENV)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    shutil.copytree(ROOT / "sdk", tmp_path / "sdk", ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    yield tmp_path


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.timeout(900)  # a fresh venv with three frameworks: ~40 s quiet, minutes on a loaded machine
def test_the_framework_examples_run_as_the_docs_say(home: Path, procs: list[subprocess.Popen[bytes]]) -> None:
    from gateway.config import load_settings

    started = time.monotonic()
    out = _bash(block("examples-install", DOC), home, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    installed = time.monotonic() - started
    python = home / ".venv-agents" / "bin" / "python"

    gateway = block("examples-gateway", DOC).rstrip("\n").splitlines()
    serve = ".venv/bin/hitl-gateway --dev serve --config examples-workers.toml"
    assert gateway[-1] == serve, gateway  # `make run` (tests/acceptance/test_readme.py) and the file
    out = _bash("\n".join(gateway[:-1]) + "\n", home)
    assert out.returncode == 0, out.stderr
    config = home / "examples-workers.toml"
    workers = load_settings(config, env={}, validate=False).workers  # the gateway's own loader; --dev adds keys
    assert sorted(workers) == ["langgraph", "openai-agents", "pydantic-ai"]
    for name, worker in workers.items():
        assert worker.command[0] == str(python), (name, worker.command)  # absolute: the agents' venv

    port, payments = free_port(), f"http://127.0.0.1:{free_port()}"
    gateway_env = _env(HITL_PAYMENTS_URL=payments)  # terminals 1 and 2 only: the workers inherit it
    with (home / "gateway.log").open("ab") as log:
        argv = [*shlex.split(serve), "--port", str(port)]
        procs.append(subprocess.Popen(argv, cwd=home, env=gateway_env, stdout=log, stderr=log))
    pay = block("examples-payments", DOC).strip()
    with (home / "payments.log").open("ab") as log:
        procs.append(subprocess.Popen(["bash", "-c", pay], cwd=home, env=gateway_env, stdout=log, stderr=log))
    _wait(f"http://127.0.0.1:{port}/healthz", home / "gateway.log")
    _wait(f"{payments}/charges", home / "payments.log")

    run = at_port(block("examples-run", DOC), port)
    assert run.count("127.0.0.1:8099") == 1, "the run block names the payment API once, at its default"
    run = run.replace("http://127.0.0.1:8099", payments).replace("127.0.0.1:8099", payments)
    default = "EXAMPLE=langgraph_agent "
    assert run.count(default) == 1, run
    for n, example in enumerate(EXAMPLES, 1):
        out = _bash(run.replace(default, f"EXAMPLE={example} "), home, timeout=180)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:] + (home / "gateway.log").read_text()[-3000:]
        assert "suspended on" in out.stdout, out.stdout
        charges = _get(f"{payments}/charges")
        assert charges is not None and len(charges["charges"]) == n, (example, charges)  # type: ignore[arg-type]
        assert '"resumed:' in out.stdout and "charged INV-1 4200" in out.stdout, out.stdout[-3000:]
    print(f"fresh venv with the three extras: {installed:.0f} s; all: {time.monotonic() - started:.0f} s")
