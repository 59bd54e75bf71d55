"""The TypeScript SDK (sdk-ts/) from pytest: its node_modules, its build, and `node` runs.

Without sdk-ts/node_modules (`npm ci` in sdk-ts/, which `make test` runs) every test here skips
with the reason, except under CI=true, where a missing install is a failure, not a skip.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "sdk-ts"
DIST = SDK / "dist"
NODE = shutil.which("node")
NPM = shutil.which("npm")


def require_node_modules() -> None:
    """Skip (or fail under CI=true) when node or sdk-ts/node_modules is missing."""
    missing = None
    if NODE is None or NPM is None:
        missing = "node and npm are not on the PATH"
    elif not (SDK / "node_modules" / ".package-lock.json").exists():
        missing = "sdk-ts/node_modules is missing: run `npm ci` in sdk-ts/ (make test does)"
    if missing is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(missing)
    pytest.skip(missing)


def _newest(paths: list[Path]) -> float:
    return max((p.stat().st_mtime for p in paths), default=0.0)


def build() -> None:
    """`npm run build` once the sources are newer than dist/ (a lock: xdist workers share it)."""
    require_node_modules()
    with (SDK / ".build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sources = [*SDK.glob("src/**/*.ts"), SDK / "tsconfig.json", SDK / "package.json"]
        stamp = DIST / ".built"
        if stamp.exists() and stamp.stat().st_mtime >= _newest(sources):
            return
        done = subprocess.run([NPM or "npm", "run", "build"], cwd=SDK, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        stamp.touch()


def node(*args: str, stdin: Any = None, env: dict[str, str] | None = None, cwd: Path = SDK) -> str:
    """Run `node ARGS` (stdin: JSON-encoded unless a str); its stdout, or fail with its output."""
    data = stdin if isinstance(stdin, str) or stdin is None else json.dumps(stdin)
    done = subprocess.run(
        [NODE or "node", *args],
        input=data,
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout
