"""`make check` is the fast loop, and its selection stays true: the guard fails a test that
starts a process without the `subprocess` mark, however it starts it and even if it catches the
refusal. The `probe_*` functions are collected only by the pytest this test starts."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import re
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "--no-subprocess"]


def _spawn() -> None:
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        pool.submit(abs, -1).result()


async def _asyncio() -> None:
    proc = await asyncio.create_subprocess_exec("true")
    await proc.wait()


STARTS = {  # how a test may start a process, and the event the guard names
    "popen": (lambda: subprocess.run(["true"], check=False), "subprocess.Popen"),
    "asyncio": (lambda: asyncio.run(_asyncio()), "subprocess.Popen"),
    "spawn": (_spawn, "multiprocessing.Process.start"),
    "system": (lambda: os.system("true"), "os.system"),
}


@pytest.mark.parametrize("how", sorted(STARTS))
def probe_unmarked(how: str) -> None:
    with contextlib.suppress(Exception):  # code under test may swallow the refusal: the test fails anyway
        STARTS[how][0]()


@pytest.mark.subprocess
def probe_marked() -> None:
    subprocess.run(["true"], check=True)


@pytest.mark.subprocess
def test_the_guard_fails_every_unmarked_start_and_lets_a_marked_one_run() -> None:
    out = subprocess.run(
        [*PYTEST, "-o", "python_functions=probe_*", f"{__file__}::probe_unmarked", f"{__file__}::probe_marked"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert re.search(r"\b4 failed, 1 passed\b", out.stdout), out.stdout[-3000:]
    failures = dict(re.findall(r"_+ probe_unmarked\[(\w+)\] _+\n(.*?)\n", out.stdout))
    assert failures.keys() == STARTS.keys(), out.stdout[-3000:]
    for how, (_, event) in STARTS.items():
        assert failures[how].startswith(f"started a process ({event}"), failures[how]


def test_make_check_runs_lint_types_and_the_guarded_selection() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^check: \$\(STAMP\) lint typecheck fast$", makefile, re.M)
    fast = re.search(r"^fast: .*\n\t(.*)$", makefile, re.M)
    assert fast is not None and '-m "not subprocess" --no-subprocess' in fast.group(1)
    assert re.search(r"^## make check: ", makefile, re.M) and re.search(r"^## make test: ", makefile, re.M)
    readme = (ROOT / "README.md").read_text()
    assert "\nmake check  #" in readme and "\nmake test   #" in readme
