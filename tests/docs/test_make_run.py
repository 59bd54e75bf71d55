"""`make run` installs what serving needs and nothing else: the pip commands of the stamp `run:`
depends on, with their extras resolved from pyproject.toml and sdk/pyproject.toml, name no agent
framework, type checker, test tool or browser driver. Those come with `make test`, into the same
venv, on top of what `make run` built (python -m bench.first_hour measures both)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = (ROOT / "Makefile").read_text()
# what serving never imports: the frameworks the SDK integrates with, and the tools of `make test`
NOT_FOR_SERVING = {
    "langgraph",
    "langchain",
    "openai-agents",
    "pydantic-ai-slim",
    "claude-agent-sdk",
    "mypy",
    "playwright",
    "pytest",
    "ruff",
    "hypothesis",
    "import-linter",
}


def _variables() -> dict[str, str]:
    return dict(re.findall(r"^([A-Z_]+) [:?]?= ?(.*)$", MAKEFILE, re.M))


def _expand(text: str, variables: dict[str, str]) -> str:
    for _ in range(5):
        text = re.sub(r"\$\((\w+)\)", lambda m: variables.get(m.group(1), m.group(0)), text)
    return text


def _recipe(target: str) -> tuple[list[str], list[str]]:
    """A rule's prerequisites and its recipe lines, variables expanded."""
    variables = _variables()
    for m in re.finditer(r"^([^\s:#=]+):(?!=)([^\n]*)\n((?:\t[^\n]*\n)*)", MAKEFILE, re.M):
        if _expand(m.group(1), variables) == target:
            prerequisites = _expand(m.group(2), variables).split()
            return prerequisites, [_expand(line.strip(), variables) for line in m.group(3).splitlines()]
    raise AssertionError(f"no rule for {target} in the Makefile")


def _requirements(spec: str) -> set[str]:
    """The distributions a pip argument like `.[dev,mcp]` or `./sdk[langgraph]` brings directly."""
    m = re.fullmatch(r"'?(\./sdk|\.)(?:\[([\w,-]*)\])?'?", spec)
    assert m is not None, spec
    project = tomllib.loads((ROOT / m.group(1) / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in filter(None, (m.group(2) or "").split(",")):
        reqs += project["optional-dependencies"][extra]
    return {re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0].lower().replace("_", "-") for r in reqs}


def _installed_by(target: str) -> set[str]:
    _, recipe = _recipe(target)
    names: set[str] = set()
    for line in recipe:
        if "pip install" not in line:
            continue
        words = line.split("pip install", 1)[1].split()
        specs = [w for w in words if not w.startswith("-") and w != "pip"]  # `--upgrade pip`: the installer
        for spec in specs:
            names |= _requirements(spec)
    return names


def test_make_run_installs_no_framework_type_checker_or_browser() -> None:
    prerequisites, recipe = _recipe("run")
    assert recipe == [".venv/bin/hitl-gateway --dev serve"]
    (stamp,) = prerequisites
    installed = _installed_by(stamp)
    assert {"hitl-gateway-sdk", "aiohttp", "asyncpg", "mcp"} <= installed, installed
    assert installed & NOT_FOR_SERVING == set()


def test_make_test_adds_the_rest_to_the_venv_make_run_built() -> None:
    """One venv, two stamps: the test stamp builds on the run stamp (so `make check` after
    `make run` installs only what is missing), and brings the frameworks and tools."""
    run_stamp = _recipe("run")[0][0]
    test_stamp = _recipe("check")[0][0]
    assert run_stamp != test_stamp and run_stamp in _recipe(test_stamp)[0]
    assert {"langgraph", "openai-agents", "mypy", "playwright", "pytest"} <= _installed_by(test_stamp)
    assert all("-m venv" not in line for line in _recipe(test_stamp)[1])  # the same venv, not a second one


def test_make_demo_needs_only_what_make_run_installs() -> None:
    """The demo runs the gateway, the invoice agent and the fake payment API: serving's stamp is
    enough, and a newcomer's `make demo` after `make run` installs nothing more."""
    assert _recipe("demo")[0] == _recipe("run")[0]
