"""One address each: the examples find the gateway where its settings put it and the fake payment
API at $HITL_PAYMENTS_URL (examples/addresses.py), and `make demo` listens where `make run` would.
They used to hard-code 127.0.0.1:8099 in every worker, and the demo 8080 (or $DEMO_PORT)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from examples import demo, framework_common
from examples.addresses import gateway_url, payments_port, payments_url
from examples.invoice_agent import agent as invoice_agent
from gateway.config import NON_CONFIG_VARS, load_settings

ROOT = Path(__file__).resolve().parents[2]
PAY = "http://127.0.0.1:18099"
DOCUMENTED = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    import os

    for name in [n for n in os.environ if n.startswith("HITL_")]:
        monkeypatch.delenv(name)
    return monkeypatch


def test_the_workers_charge_at_the_configured_payment_api(clean_env: pytest.MonkeyPatch) -> None:
    assert framework_common.parse_args(["resume"], worker="w").payments == "http://127.0.0.1:8099"
    assert invoice_agent.parse_args(["resume"]).payments == "http://127.0.0.1:8099"
    clean_env.setenv("HITL_PAYMENTS_URL", PAY + "/")
    assert framework_common.parse_args(["resume"], worker="w").payments == PAY
    assert invoice_agent.parse_args(["resume"]).payments == PAY
    assert invoice_agent.parse_args(["resume", "--payments", "http://x:1"]).payments == "http://x:1"
    assert payments_url() == PAY and payments_port() == 18099  # where the fake payment API listens


def test_the_agents_find_the_gateway_where_its_settings_put_it(clean_env: pytest.MonkeyPatch) -> None:
    assert framework_common.parse_args(["start"], worker="w").gateway == "http://127.0.0.1:8080"
    clean_env.setenv("HITL_SERVER_PORT", "9191")
    assert framework_common.parse_args(["start"], worker="w").gateway == "http://127.0.0.1:9191"
    assert invoice_agent.parse_args(["start"]).gateway == "http://127.0.0.1:9191"
    clean_env.setenv("HITL_GATEWAY_URL", "http://gw.test:1")  # what a worker is given wins
    assert invoice_agent.parse_args(["start"]).gateway == "http://gw.test:1"


def test_the_quickstart_finds_the_gateway_where_make_run_listens(clean_env: pytest.MonkeyPatch) -> None:
    """`HITL_SERVER_PORT=9191 make run`, then `python examples/quickstart.py` in the same shell."""
    import importlib

    import examples.quickstart as quickstart

    clean_env.setenv("HITL_SERVER_PORT", "9191")
    assert importlib.reload(quickstart).GATEWAY == "http://127.0.0.1:9191"


@pytest.mark.parametrize(
    ("env", "host", "port"),
    [({}, "127.0.0.1", 8080), ({"HITL_SERVER_HOST": "0.0.0.0", "HITL_SERVER_PORT": "9000"}, "0.0.0.0", 9000)],
)
def test_gateway_url_is_the_gateways_own_url(env: dict[str, str], host: str, port: int) -> None:
    """The same address the gateway derives for its public_url (gateway/settings/server.py)."""
    server = load_settings(None, env, validate=False).server
    assert (server.host, server.port) == (host, port)
    assert gateway_url(env) == server.public_url


def test_make_demo_listens_where_make_run_would(tmp_path: Path) -> None:
    assert demo.address(None, {}) == ("127.0.0.1", 8080, "http://127.0.0.1:8080")
    assert demo.address(None, {"HITL_SERVER_PORT": "9123"}) == ("127.0.0.1", 9123, "http://127.0.0.1:9123")
    assert demo.address(7000, {"HITL_SERVER_PORT": "9123"})[1:] == (7000, "http://127.0.0.1:7000")  # --port wins
    public = {"HITL_SERVER_PORT": "9123", "HITL_SERVER_PUBLIC_URL": "https://gw.example"}
    assert demo.address(7000, public) == ("127.0.0.1", 7000, "https://gw.example")  # configured: kept
    config = tmp_path / "gw.toml"
    config.write_text("[server]\nport = 9555\n")
    assert demo.address(None, {"HITL_CONFIG": str(config)})[1] == 8080  # --dev reads no file: nor does the demo


def test_the_demo_has_no_port_of_its_own() -> None:
    """Its code names no port and reads no variable of its own (its docstring explains the defaults)."""
    tree = ast.parse((ROOT / "examples" / "demo.py").read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, DOCUMENTED) and ast.get_docstring(n)}
    code = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and id(n) not in docs]
    assert [c for c in code if c in (8080, 8099) or any(s in str(c) for s in ("8080", "8099", "DEMO_PORT"))] == []


def test_the_gateway_accepts_the_payment_api_variable() -> None:
    """A worker inherits the gateway's environment, so the gateway must start with it set."""
    assert "HITL_PAYMENTS_URL" in NON_CONFIG_VARS
    load_settings(None, {"HITL_PAYMENTS_URL": PAY}, validate=False)


def test_no_worker_command_in_the_docs_is_a_bare_python() -> None:
    """docs/worker-sdk.md: never a bare "python" (whichever comes first on the gateway's PATH)."""
    bare = re.compile(r"""(?:command\s*=\s*|_COMMAND=')\[\s*"python[\d.]*"\s*,""")
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in pages for m in bare.finditer(p.read_text())]
    assert found == []
