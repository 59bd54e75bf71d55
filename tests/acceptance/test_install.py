"""`make install` puts `hitl-gateway` on the PATH, and what the docs and the CLI tell a user to run
then runs as printed: `hitl-gateway init`'s next steps, and the MCP configuration snippets of
docs/mcp.md (their exact argv, up to the MCP server's answer to `initialize`).

The install is real: a copy of the tree (as a fresh clone has it) is installed with
`make install PREFIX=<tmp>`, which builds its own venv from the package indexes; the commands then
run with that PREFIX's bin first on a PATH where no other `hitl-gateway` is found."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.procs import free_port

pytestmark = pytest.mark.subprocess
ROOT = Path(__file__).resolve().parents[2]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}


def _copy_tree(dest: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH") and not k.startswith("HITL_")}
    # no other hitl-gateway (a checkout's .venv, a user's install) may answer for the installed one
    dirs = env.get("PATH", "/usr/bin:/bin").split(os.pathsep)
    env["PATH"] = os.pathsep.join(d for d in dirs if d and not (Path(d) / "hitl-gateway").exists())
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """(PREFIX, the environment with PREFIX/bin first on the PATH), after `make install PREFIX=...`."""
    base = tmp_path_factory.mktemp("install")
    src, prefix = base / "src", base / "prefix"
    src.mkdir()
    _copy_tree(src)
    env = _clean_env()
    done = subprocess.run(
        ["make", "install", f"PREFIX={prefix}"], cwd=src, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{prefix}/bin is not on your PATH" in done.stdout  # it says how to put it there
    env["PATH"] = f"{prefix / 'bin'}{os.pathsep}{env['PATH']}"
    assert shutil.which("hitl-gateway", path=env["PATH"]) == str(prefix / "bin" / "hitl-gateway")
    shutil.rmtree(src)  # the install does not depend on the tree it came from
    return prefix, env


def _shell(line: str, cwd: Path, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as resp:
            return int(resp.status) == 200
    except OSError:
        return False


def _serves(line: str, cwd: Path, env: dict[str, str]) -> None:
    """`line` starts a gateway that answers /healthz (on a free port: HITL_SERVER_PORT), then stops on SIGTERM."""
    port = free_port()
    log = cwd / f"serve-{port}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            ["bash", "-c", f"exec {line}"],
            cwd=cwd,
            env={**env, "HITL_SERVER_PORT": str(port)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while not _healthy(port):
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) == 0, log.read_text()


@pytest.mark.parametrize("path", [None, "conf/my gateway.toml"])
@pytest.mark.timeout(600)  # the fixture installs into a fresh venv
def test_init_prints_next_steps_that_run_as_printed(
    installed: tuple[Path, dict[str, str]], tmp_path: Path, path: str | None
) -> None:
    _, env = installed
    if path is not None:
        (tmp_path / path).parent.mkdir()
    done = _shell("hitl-gateway init" + (f" --path {shlex.quote(path)}" if path else ""), tmp_path, env)
    assert done.returncode == 0, done.stderr
    steps = [line.strip() for line in done.stdout.split("Next:\n", 1)[1].splitlines() if line.startswith("  ")]
    assert [s.split()[-1] for s in steps] == ["check-config", "serve"], done.stdout
    assert all(s.startswith("hitl-gateway ") for s in steps), steps  # on the PATH: printed by its name
    for step in steps:
        if step.endswith(" serve"):
            _serves(step, tmp_path, env)
        else:
            ran = _shell(step, tmp_path, env)
            assert ran.returncode == 0, (step, ran.stderr)
            assert json.loads(ran.stdout)["server"]["port"] == 8080  # the config init wrote


def _snippets() -> tuple[dict[str, dict[str, Any]], list[str], list[str]]:
    """docs/mcp.md: the `mcpServers` JSON, the argv Claude Code's `claude mcp add` is given, and the
    OpenAI Agents SDK's `MCPServerStdio` argv."""
    doc = (ROOT / "docs" / "mcp.md").read_text()
    blocks = re.findall(r"```(\w+)\n(.*?)```", doc, re.S)
    servers = next(json.loads(text) for lang, text in blocks if lang == "json" and "mcpServers" in text)["mcpServers"]
    add = next(text for lang, text in blocks if lang == "sh" and "claude mcp add hitl " in text)
    claude = shlex.split(add.replace("\\\n", " ").splitlines()[0])
    python = next(text for lang, text in blocks if lang == "python" and "MCPServerStdio(" in text)
    m = re.search(r'"command": "([^"]+)",\s*"args": (\[[^\]]*\])', python)
    assert m is not None
    return servers, claude[claude.index("--") + 1 :], [m.group(1), *json.loads(m.group(2))]


def _initialize(argv: list[str], env: dict[str, str], cwd: Path) -> dict[str, object]:
    """Start `argv` as an MCP client would (stdio) and return its answer to `initialize`."""
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        out, err = proc.communicate(json.dumps(INITIALIZE) + "\n", timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert lines and lines[0].get("id") == 1 and "result" in lines[0], (argv, out, err)
    result: dict[str, object] = lines[0]["result"]
    return result


@pytest.mark.timeout(600)
def test_the_mcp_snippets_run_as_printed(installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    prefix, env = installed
    servers, claude, openai = _snippets()
    hitl = servers["hitl"]
    argv = [str(hitl["command"]), *map(str, hitl["args"])]
    assert claude == argv and openai == argv  # one command, three clients' spellings
    assert shutil.which(argv[0], path=env["PATH"]) == str(prefix / "bin" / "hitl-gateway")
    snippet_env = {**env, "XDG_STATE_HOME": str(tmp_path / "state"), **hitl["env"]}
    assert _initialize(argv, snippet_env, tmp_path)["serverInfo"] == {"name": "hitl-gateway", "version": "0.1.0"}

    # the gate: its own argv as printed, up to `--`; the upstream after it is replaced by a local
    # MCP server (the snippet's runs npx from the network), started by the installed interpreter
    gate = servers["files-gated"]
    gate_argv = [str(gate["command"]), *map(str, gate["args"])]
    upstream = [str(prefix / "lib" / "hitl-gateway" / "bin" / "python"), str(ROOT / "tests/fakes/mcp_upstream.py")]
    gate_argv = [*gate_argv[: gate_argv.index("--") + 1], *upstream, str(tmp_path / "counts")]
    gate_env = {**env, "XDG_STATE_HOME": str(tmp_path / "state"), **gate["env"]}
    assert _initialize(gate_argv, gate_env, tmp_path)["serverInfo"] == {"name": "hitl-gateway-gate", "version": "0.1.0"}
