"""A worker dies with the process that started it, through setpriv or the Python fallback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gateway.jobs import orphans

pytestmark = [
    pytest.mark.subprocess,  # every test here starts a process
    pytest.mark.skipif(not orphans.LINUX, reason="PR_SET_PDEATHSIG is Linux only"),
]

PARENT = """
import subprocess, sys, time
from gateway.jobs import orphans
if sys.argv[1] == "fallback":
    orphans.SETPRIV = None
child = subprocess.Popen(orphans.guarded(["sleep", "60"]))
print(child.pid, flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.parametrize("mode", ["setpriv", "fallback"])
def test_the_guarded_command_dies_when_its_parent_is_killed(mode: str) -> None:
    if mode == "setpriv" and orphans.SETPRIV is None:
        pytest.skip("setpriv (util-linux) is not installed here")
    parent = subprocess.Popen([sys.executable, "-c", PARENT, mode], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    with parent.stdout:
        child = int(parent.stdout.readline())
    deadline = time.monotonic() + 5
    while not Path(f"/proc/{child}/cmdline").read_bytes().startswith(b"sleep") and time.monotonic() < deadline:
        time.sleep(0.02)  # the fallback is still in Python: wait for the exec
    assert _alive(child)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    alive = _alive(child)
    if alive:
        os.kill(child, signal.SIGKILL)
    assert not alive, "the command outlived its parent"


def test_the_fallback_refuses_to_start_an_orphan() -> None:
    """The parent died before the signal was set: the guard exits 75 (retried) instead of
    running the command unwatched."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    proc = subprocess.run(
        [sys.executable, "-m", "gateway.jobs.orphans", str(dead.pid), "echo", "ran"], capture_output=True
    )
    assert proc.returncode == 75 and proc.stdout == b""
