"""The import contracts of pyproject.toml's [tool.importlinter] hold (type-checking imports count)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_hold(capsys: pytest.CaptureFixture[str]) -> None:
    # import-linter configures logging with dictConfig, which disables every logger that exists
    # (ours included): a later test in this process would then capture no log line at all.
    loggers = [lg for lg in logging.root.manager.loggerDict.values() if isinstance(lg, logging.Logger)]
    enabled = [lg for lg in loggers if not lg.disabled]
    try:
        status = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    finally:
        for lg in enabled:
            lg.disabled = False
    assert status == 0, capsys.readouterr().out
