"""The CLI's printed next steps name the command so that they run as printed: `hitl-gateway` when
that name on the PATH is this very program, else the path it was started by."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import pytest

from gateway.cli import init
from gateway.cli.common import program


def _script(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_a_checkout_venv_not_on_the_path_is_printed_as_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = _script(tmp_path / ".venv" / "bin" / "hitl-gateway")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert program(".venv/bin/hitl-gateway") == ".venv/bin/hitl-gateway"
    assert program(str(venv)) == str(venv)
    other = _script(tmp_path / "other" / "hitl-gateway")  # another install answers for the name: not this one
    monkeypatch.setenv("PATH", str(other.parent))
    assert program(str(venv)) == str(venv)
    assert program(str(tmp_path / "with space" / "hitl-gateway")) == f"'{tmp_path}/with space/hitl-gateway'"


def test_the_name_on_the_path_is_printed_bare_when_it_is_this_program(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = _script(tmp_path / "lib" / "hitl-gateway" / "bin" / "hitl-gateway")
    link = tmp_path / "bin" / "hitl-gateway"  # make install's link
    link.parent.mkdir()
    link.symlink_to(real)
    monkeypatch.setenv("PATH", str(link.parent))
    assert program(str(link)) == "hitl-gateway"
    assert program(str(real)) == "hitl-gateway"  # the same file, by its other path
    assert program("/usr/lib/python3/gateway/__main__.py") == "hitl-gateway"  # python -m gateway


def test_init_prints_the_next_steps_with_the_program_it_was_started_as(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr("sys.argv", [".venv/bin/hitl-gateway", "init"])
    args = argparse.Namespace(path=str(tmp_path / "my gw.toml"), config=None)
    assert asyncio.run(init.run(args, None)) == 0
    steps = capsys.readouterr().out.split("Next:\n", 1)[1].splitlines()
    assert steps == [
        f"  .venv/bin/hitl-gateway --config '{tmp_path}/my gw.toml' check-config",
        f"  .venv/bin/hitl-gateway --config '{tmp_path}/my gw.toml' serve",
    ]
