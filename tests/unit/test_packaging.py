"""Packaging: building the distribution prints no deprecation warnings (the first build a user
runs used to print three 13-line warnings about the TOML license table)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import source_copy


@pytest.mark.subprocess
def test_building_the_wheel_prints_no_deprecation_warning(tmp_path: Path) -> None:
    src = source_copy(tmp_path / "src")
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-w", str(tmp_path / "wheels"), "-v"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    log = out.stdout + out.stderr
    assert "deprecated" not in log.lower(), [line for line in log.splitlines() if "deprecat" in line.lower()]
    assert list((tmp_path / "wheels").glob("hitl_gateway-*.whl"))
