"""The published shape: `npm pack` builds the tarball, a scratch project installs it (it has no
runtime dependency: the install needs no registry) and runs the invoice example from there, as
the gateway's worker too; and the SDK's own `node --test` suite passes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.typescript.node import NPM, SDK, build, node, require_node_modules
from tests.typescript.stack import COMMON, EXAMPLE, TsStack

pytestmark = pytest.mark.subprocess


def npm(*args: str, cwd: Path) -> str:
    done = subprocess.run([NPM or "npm", *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_node_test_suite() -> None:
    build()
    out = node("--test", *sorted(str(p.relative_to(SDK)) for p in (SDK / "test").glob("*.test.mjs")))
    assert "# fail 0" in out, out


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A project with the packed tarball installed, and the example copied in (with the module it imports)."""
    require_node_modules()
    build()
    [info] = json.loads(npm("pack", "--json", "--ignore-scripts", "--pack-destination", str(tmp_path), cwd=SDK))
    files = {f["path"] for f in info["files"]}
    assert {"dist/index.js", "dist/index.d.ts", "dist/openapi.d.ts", "package.json"} <= files, files
    assert not any(f.startswith(("node_modules/", "test/")) for f in files), files
    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").write_text(json.dumps({"name": "scratch", "private": True, "type": "module"}))
    npm("install", "--no-audit", "--no-fund", "--offline", str(tmp_path / info["filename"]), cwd=project)
    for example in (EXAMPLE, COMMON):  # the example imports ./common.mjs
        shutil.copy(example, project / example.name)
    return project


async def test_the_packed_tarball_runs_the_example(scratch: Path, ts: TsStack) -> None:
    ts.example = scratch / EXAMPLE.name
    ts.serve()
    await ts.start("packed-1")
    approval = await ts.approval("packed-1")
    await ts.decide(approval["id"], "approve")
    await ts.job(approval["id"])
    assert [c["amount"] for c in ts.payments.charges.values()] == [4200]
    assert (await ts.steps("packed-1"))["email"]["output"]["body"] == "Charged 4200 as ch_1"


def test_the_adapters_take_the_frameworks_own_types() -> None:
    """sdk-ts/test/types/adapters.ts compiles (tsc, strict): a TypeScript agent hands the AI SDK's
    and the OpenAI Agents SDK's results to the adapters without a cast."""
    build()
    npm("run", "typecheck", cwd=SDK)
