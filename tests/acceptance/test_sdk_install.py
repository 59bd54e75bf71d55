"""`pip install ./sdk` in a fresh venv: an importable agent SDK and none of the server's packages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess
ROOT = Path(__file__).resolve().parents[2]
SERVER_ONLY = {"python-telegram-bot", "slack-sdk", "apscheduler", "jinja2", "prometheus-client", "asyncpg"}
SERVER_ONLY |= {"hitl-gateway", "aiohttp-jinja2", "aiosqlite", "itsdangerous", "cryptography", "uvloop"}


def _run(*cmd: str) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_agent_sdk_installs_alone(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", str(venv))  # this venv's pip installs into it
    python = str(venv / "bin" / "python")
    # a real install with dependency resolution; pip's wheel cache keeps it to seconds
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", str(ROOT / "sdk"))
    listed = json.loads(_run(sys.executable, "-m", "pip", "--python", python, "list", "--format", "json"))
    names = {p["name"].lower().replace("_", "-") for p in listed}
    assert "hitl-gateway-sdk" in names and "aiohttp" in names
    assert names & SERVER_ONLY == set()
    probe = (
        "import sys, hitl_sdk, hitl_sdk.integrations.langgraph_requests; "
        "from hitl_sdk import DurableRun, GatewayClient, verify_signature; "
        "assert not [m for m in sys.modules if m.split('.')[0] in ('gateway', 'adapters')]; "
        "print(hitl_sdk.__version__)"
    )
    # outside the checkout, so that only the installed package can be imported
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "0.1.0", done.stdout + done.stderr
    # an integration needs its extra: without it, the framework's import fails and says which
    missing = subprocess.run(
        [python, "-c", "import hitl_sdk.integrations.openai_agents"], capture_output=True, text=True, cwd=tmp_path
    )
    assert missing.returncode == 1 and "No module named 'agents'" in missing.stderr
