"""sdk-ts/src/openapi.d.ts is what openapi-typescript makes of the gateway's OpenAPI document now:
a contract change that the TypeScript SDK's types do not follow fails here."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.typescript.node import ROOT, SDK, require_node_modules

pytestmark = pytest.mark.subprocess


def test_the_generated_types_are_current() -> None:
    require_node_modules()
    done = subprocess.run(
        [sys.executable, str(SDK / "scripts" / "openapi.py"), "--check"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'sdk'}"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
