"""The README as a new user follows it: its walk-through and the SDK snippet, the invoice
example of docs/getting-started.md and the configuration block of docs/configuration.md, run from
their own code blocks (tests/docs/readme.py extracts them), so the docs cannot drift from the code.

`make run` is `.venv/bin/hitl-gateway --dev serve` (checked against the Makefile below); the
test runs exactly that, in a fresh directory that holds only a link to the venv and the examples,
on a free port (the README's one address variable is pointed at it)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.docs.readme import DOCS, ROOT, at_port, block, region
from tests.procs import free_port

pytestmark = pytest.mark.subprocess
VENV = Path(sys.executable).parent.parent
GETTING_STARTED = DOCS / "getting-started.md"


def test_make_run_is_what_the_readme_and_these_tests_say() -> None:
    recipe = re.search(r"^run: .*\n\t(.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert recipe is not None and recipe.group(1).strip() == "$(BIN)/hitl-gateway --dev serve"


def test_the_sdk_snippet_is_the_quickstart_example() -> None:
    assert block("sdk") == region(ROOT / "examples" / "quickstart.py", "sdk")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fresh directory as a new user's checkout looks to the README's commands."""
    (tmp_path / ".venv").symlink_to(VENV)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    return tmp_path


def _env(**extra: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("HITL_")} | extra


class MakeRun:
    """`make run` in `home`, on a free port, with the environment the README exports first."""

    def __init__(self, home: Path) -> None:
        self.home, self.port = home, free_port()
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, env: dict[str, str] | None = None) -> None:
        argv = [str(self.home / ".venv/bin/hitl-gateway"), "--dev", "serve", "--port", str(self.port)]
        with (self.home / "gateway.log").open("ab") as log:
            self.procs.append(subprocess.Popen(argv, cwd=self.home, env=_env(**(env or {})), stdout=log, stderr=log))
        _wait(f"http://127.0.0.1:{self.port}/healthz", self.home / "gateway.log")


@pytest.fixture
def make_run(home: Path) -> Iterator[MakeRun]:
    run = MakeRun(home)
    yield run
    for proc in run.procs:
        proc.terminate()
        proc.wait(timeout=30)


def _wait(url: str, log: Path, within: float = 30) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    pytest.fail(f"{url} did not answer: {log.read_text()[-3000:] if log.exists() else ''}")


def _bash(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", code], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=120
    )


def _last_json(text: str) -> dict[str, Any]:
    """The JSON object the output ends with (curl prints no newline before the next command's)."""
    for at in reversed([m.start() for m in re.finditer(r"\{\n", text)]):
        try:
            found: dict[str, Any] = json.loads(text[at:])
        except ValueError:
            continue
        return found
    raise AssertionError(f"no JSON object at the end of {text[-500:]!r}")


def test_the_walk_through_runs_as_written(home: Path, make_run: MakeRun) -> None:
    make_run.start()
    out = _bash(at_port(block("walkthrough"), make_run.port), home)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert '"status": "waiting_approval"' in out.stdout  # 1. suspended
    shown = _last_json(out.stdout)  # 4. `approvals show`
    assert shown["status"] == "approved" and shown["decision"]["decided_by"] == "operator:dev"
    assert [c["channel"] for c in shown["cards"]] == ["web"] and shown["events"][0]["kind"] == "suspended"


def test_the_invoice_example_runs_as_written(home: Path, make_run: MakeRun) -> None:
    gateway = block("invoice-gateway", GETTING_STARTED).strip().splitlines()
    assert gateway[-1] == "make run", gateway
    env = {}
    for line in gateway[:-1]:
        name, _, value = line.removeprefix("export ").partition("=")
        env[name] = shlex.split(value)[0]
    make_run.start(env)
    payments_cmd = block("invoice-payments", GETTING_STARTED).strip()
    assert "--port 8099" in payments_cmd
    with subprocess.Popen(["bash", "-c", payments_cmd], cwd=home, env=_env()) as payments:
        try:
            _wait("http://127.0.0.1:8099/charges", home / "payments.log")
            out = _bash(at_port(block("invoice-agent", GETTING_STARTED), make_run.port), home)
            assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
            assert "suspended on approval" in out.stdout
            charges = json.loads(out.stdout[out.stdout.rindex('{"charges"') :])  # the last command's
            assert len(charges["charges"]) == 1 and charges["charges"][0]["amount"] == 4200, charges
        finally:
            payments.terminate()
            payments.wait(timeout=20)


def test_the_quickstart_runs_as_written(home: Path, make_run: MakeRun) -> None:
    """examples/quickstart.py against `make run`, as the README says: it suspends and exits 0;
    once the operator approves, the gateway's worker runs its `resume` and the run finishes."""
    make_run.start({"HITL_WORKERS_QUICKSTART_COMMAND": '["{python}", "examples/quickstart.py", "resume"]'})
    gw = f"http://127.0.0.1:{make_run.port}"
    env = _env(HITL_GATEWAY_URL=gw)
    out = subprocess.run(
        [str(home / ".venv/bin/python"), "examples/quickstart.py"], cwd=home, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0 and "suspended: approve it at" in out.stdout, out.stderr
    approval_id = out.stdout.strip().rsplit("/", 1)[-1]
    secrets = json.loads((home / "var" / "dev-secrets.json").read_text())
    decide = _bash(
        f"curl -sf -H 'Authorization: Bearer {secrets['operator_key']}' {gw}/v1/approvals/{approval_id}/decision"
        ' -d \'{"outcome": "approve"}\'',
        home,
    )
    assert decide.returncode == 0, decide.stderr
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        req = urllib.request.Request(
            f"{gw}/v1/runs/quickstart-1/steps", headers={"Authorization": f"Bearer {secrets['api_key']}"}
        )
        with urllib.request.urlopen(req, timeout=5) as resp:
            steps = {s["name"]: s for s in json.loads(resp.read())["items"]}
        if "email" in steps:
            break
        time.sleep(0.2)
    assert steps["charge"]["status"] == "succeeded" and steps["email"]["output"] == "told ACME: approve", steps


def test_make_demo_shows_every_stage_in_order(tmp_path: Path) -> None:
    """`make demo` (examples/demo.py): the stages as they happen, then one charge. `--approve
    --exit` decide as the dev operator and stop, where a person would press and Ctrl-C.

    One address: it runs the Makefile's recipe itself (on this venv, `-o` so that make installs
    nothing), whose gateway listens on $HITL_SERVER_PORT as `make run`'s does, and whose fake
    payment API, agent and worker use $HITL_PAYMENTS_URL; it once started on 8080 whatever
    HITL_SERVER_PORT said."""
    recipe = re.search(r"^demo: .*\n\t(.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert recipe is not None and "-m examples.demo" in recipe.group(1)
    port, payments = free_port(), f"http://127.0.0.1:{free_port()}"
    out = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-C",
            str(ROOT),
            "demo",
            f"VENV={VENV}",
            "-o",
            f"{VENV}/.run-stamp",
            f"DEMO_ARGS=--approve --exit --dir {tmp_path}",
        ],
        env=_env(HITL_SERVER_PORT=str(port), HITL_PAYMENTS_URL=payments),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert f"), fake payment API at {payments}\n" in out.stdout, out.stdout
    gw = f"http://127.0.0.1:{port}"
    stages = [f"gateway at {gw} ", "suspended:", "card posted", f"waiting for you: sign in at {gw}/login/link/"]
    stages += [f"then press Approve or Reject at {gw}/approvals/", "approved by operator:dev"]
    stages += ["resumed:", "the run finished", "charges at the payment API: 1"]
    positions = [out.stdout.find(f"demo: {s}") for s in stages]
    assert -1 not in positions and positions == sorted(positions), out.stdout


def test_the_configuration_block_loads_as_it_stands(tmp_path: Path) -> None:
    """The annotated config block of docs/configuration.md loads as it stands (it once failed:
    `secret_keys[0]` too short)."""
    from gateway.config import load_settings

    path = tmp_path / "hitl-gateway.toml"
    path.write_text(block("config", DOCS / "configuration.md"))
    settings = load_settings(path, env={})
    assert settings.workers["billing"].command[0] == sys.executable
    assert settings.security.secret_keys[-1] == "the-newest-secret-signs-now"
