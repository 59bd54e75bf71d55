"""`hitl-gateway mcp` / `mcp-gate` as a user starts them: the optional extra, the agent-side
config, and one clear line for every start-up problem."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.config import load_settings
from gateway.mcp.cli import add_parser, gate_spec
from gateway.mcp.secret import GateSecret, gate_secret, state_file
from tests.procs import write_config

# `mcp` missing, as on an install without the extra: `import mcp` then raises ModuleNotFoundError.
WITHOUT_EXTRA = "import sys; sys.modules['mcp'] = None; from gateway.cli import main; sys.exit(main(sys.argv[1:]))"


def run(
    *args: str, cwd: Path, env: dict[str, str] | None = None, code: str | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")}
    command = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "gateway", *args]
    return subprocess.run(command, cwd=cwd, env=base | (env or {}), capture_output=True, text=True, timeout=60)


@pytest.mark.subprocess
@pytest.mark.parametrize("command", [["mcp"], ["mcp-gate", "--require-approval", "x", "--", "srv"]])
def test_without_the_extra_one_line_names_it_and_exit_2(tmp_path: Path, command: list[str]) -> None:
    out = run(*command, cwd=tmp_path, env={"HITL_API_KEY": "k" * 20}, code=WITHOUT_EXTRA)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"hitl-gateway {command[0]}: needs the 'mcp' extra: pip install ./sdk '.[mcp]' from the checkout"
    ]


@pytest.mark.subprocess
def test_the_core_gateway_never_imports_the_mcp_sdk(tmp_path: Path) -> None:
    config = write_config(tmp_path / "gw.toml", f"sqlite:///{tmp_path / 'gw.db'}", 8099)
    probe = (
        "import sys; sys.modules['mcp'] = None\n"
        "import gateway.cli.main, gateway.http.app, gateway.runtime, gateway.mcp, gateway.mcp.cli, gateway.sdk\n"
        "from gateway.cli import main\n"
        f"code = main(['--config', {str(config)!r}, 'check-config'])\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('mcp_types', 'uvicorn', 'starlette', 'httpx2')]\n"
        "print(json.dumps({'code': code, 'loaded': loaded}), file=sys.stderr)\n"
    )
    out = run(cwd=tmp_path, code="import json\n" + probe)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stderr.strip().splitlines()[-1]) == {"code": 0, "loaded": []}


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [
        (["mcp"], {}, "set HITL_API_KEY"),
        (["mcp", "--http", "localhost"], {}, "--http: expected HOST:PORT"),
        (["mcp-gate", "--require-approval", "x"], {"HITL_API_KEY": "k" * 20}, "name the wrapped server"),
        (["mcp-gate", "--upstream", "srv"], {"HITL_API_KEY": "k" * 20}, "name the tools that need a human"),
        (
            ["mcp-gate", "--upstream", "srv", "--require-approval", "x", "--upstream-header", "nocolon"],
            {"HITL_API_KEY": "k" * 20},
            "--upstream-header: expected NAME:VALUE",
        ),
        (
            ["mcp-gate", "--upstream", "srv", "--require-approval", "x"],
            {"HITL_API_KEY": "k" * 20, "HITL_MCP_GATE_SECRET": "short"},
            "[mcp_gate] secret (HITL_MCP_GATE_SECRET): at least 16 characters",
        ),
        (  # an upstream that cannot start, exits at once, or is not listening: one line, not a traceback
            ["mcp-gate", "--require-approval", "x", "--", "/nonexistent/mcp-server"],
            {"HITL_API_KEY": "k" * 20},
            'upstream_unavailable: the upstream ["/nonexistent/mcp-server"] did not start',
        ),
        (
            ["mcp-gate", "--require-approval", "x", "--", "false"],
            {"HITL_API_KEY": "k" * 20},
            "did not start or did not answer initialize: MCPError: Connection closed",
        ),
        (
            ["mcp-gate", "--require-approval", "x", "--upstream", "http://127.0.0.1:9/mcp"],
            {"HITL_API_KEY": "k" * 20},
            "did not start or did not answer initialize: ConnectError",
        ),
    ],
)
@pytest.mark.subprocess
def test_start_up_problems_are_one_line_and_exit_2(
    tmp_path: Path, args: list[str], env: dict[str, str], says: str
) -> None:
    out = run(*args, cwd=tmp_path, env=env)
    assert out.returncode == 2
    [line] = out.stderr.strip().splitlines()
    assert says in line, line


@pytest.mark.subprocess
def test_agent_side_commands_need_none_of_the_gateways_secrets(tmp_path: Path) -> None:
    """An agent's machine has no [security] section: `mcp` must still start (it only reads
    [server] public_url, [mcp] and [mcp_gate]); `serve` on the same file still refuses."""
    config = tmp_path / "agent.toml"
    config.write_text('[server]\npublic_url = "http://127.0.0.1:9"\n[mcp]\nchannels = ["web"]\n')
    settings = load_settings(config, env={}, validate=False)
    assert settings.server.public_url == "http://127.0.0.1:9" and settings.mcp.channels == ("web",)
    out = run("--config", str(config), "serve", cwd=tmp_path)
    assert out.returncode == 2 and "security.secret_keys" in out.stderr


@pytest.mark.subprocess
def test_mcp_sections_load_from_file_and_env_and_secrets_stay_masked(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "gw.toml",
        f"sqlite:///{tmp_path / 'gw.db'}",
        8099,
        extra=(
            '[mcp]\nchannels = ["web"]\npolicy = "default"\n'
            '[mcp_gate]\nupstream = ["python", "srv.py"]\nrequire_approval = ["delete_*"]\n'
            'upstream_headers = { Authorization = "Bearer UPSTREAMSECRET" }\n'
            'secret = "GATESECRET-0123456789"\n'
        ),
    )
    settings = load_settings(config, env={"HITL_MCP_GATE_WAIT_SECONDS": "5"})
    assert settings.mcp_gate.upstream == ("python", "srv.py") and settings.mcp_gate.wait_seconds == 5
    assert settings.mcp_gate.require_approval == ("delete_*",) and settings.mcp.policy == "default"
    out = run("--config", str(config), "check-config", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "UPSTREAMSECRET" not in out.stdout
    assert json.loads(out.stdout)["mcp_gate"]["upstream_headers"] == {"Authorization": "***"}
    assert "GATESECRET" not in out.stdout and json.loads(out.stdout)["mcp_gate"]["secret"] == "***(21 chars)"


def gate_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["mcp-gate", *argv])


def test_the_gate_runs_from_mcp_gate_config_alone_and_options_win(tmp_path: Path) -> None:
    config = tmp_path / "agent.toml"
    config.write_text(
        '[mcp_gate]\nupstream = "npx -y files-server /srv"\nrequire_approval = ["write_*"]\n'
        'channels = ["slack:C1"]\npolicy = "short"\nwait_seconds = 7\n'
        'upstream_headers = { "X-Team" = "ops" }\n'
    )
    settings = load_settings(config, env={}, validate=False)
    spec = gate_spec(gate_args(), settings, {})
    assert spec["upstream"] == ["npx", "-y", "files-server", "/srv"]  # one string is split like a shell
    assert spec["require_approval"] == ("write_*",) and spec["channels"] == ("slack:C1",)
    assert spec["policy"] == "short" and spec["wait_seconds"] == 7.0 and spec["headers"] == {"X-Team": "ops"}
    options = ("--require-approval", "rm", "--wait-seconds", "2", "--upstream-header", "X-Team: dev")
    spec = gate_spec(gate_args(*options, "--", "srv", "-v"), settings, {})
    assert spec["upstream"] == ["srv", "-v"] and spec["require_approval"] == ("rm",)
    assert spec["wait_seconds"] == 2.0 and spec["headers"] == {"X-Team": "dev"}
    with pytest.raises(ValueError, match="--wait-seconds"):
        gate_spec(gate_args("--wait-seconds", "601"), settings, {})


def test_the_gate_secret_is_configured_else_kept_in_a_state_file_else_per_process(tmp_path: Path) -> None:
    """The MAC key of the gate's approvals: the configured one; else one generated once and kept
    (mode 0600), the same for every later start; else, with nowhere to keep it, one per process."""
    assert gate_secret("s" * 16, None) == GateSecret(b"s" * 16, "config")
    path = state_file({"HOME": str(tmp_path)})
    assert path == tmp_path / ".local" / "state" / "hitl-gateway" / "mcp-gate.secret"
    first = gate_secret("", path)
    assert first.source == str(path) and len(first.key) == 64 and gate_secret("", path) == first
    assert path.stat().st_mode & 0o777 == 0o600 and list(path.parent.iterdir()) == [path]
    path.write_text("short\n")
    with pytest.raises(ValueError, match="not a gate secret"):
        gate_secret("", path)
    (tmp_path / "a-file").write_text("")  # nowhere to keep a secret under it
    alone = gate_secret("", state_file({"XDG_STATE_HOME": str(tmp_path / "a-file")}))
    assert alone.source == "process" and alone != gate_secret("", None)
