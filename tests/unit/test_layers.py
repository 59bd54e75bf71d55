"""The import contracts of pyproject.toml's [tool.importlinter] hold (type-checking imports count)."""

from __future__ import annotations

from pathlib import Path

import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_hold(capsys: pytest.CaptureFixture[str]) -> None:
    status = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    assert status == 0, capsys.readouterr().out
