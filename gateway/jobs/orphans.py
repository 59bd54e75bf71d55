"""Worker processes die with the gateway (Linux: `PR_SET_PDEATHSIG` = SIGKILL).

Otherwise a gateway killed with -9 leaves its running steps behind, while the expired job lease
launches the same step again: two copies at once. The signal is set in the child, never in a
`preexec_fn` (which runs Python between fork and exec and can deadlock in a threaded process):
- our own Python children (the entrypoint pool) call `die_with_parent` first thing;
- a `command` runs under `setpriv --pdeathsig KILL` (util-linux), or, where that is missing,
  under `python -m gateway.jobs.orphans PARENT_PID cmd...`, which sets the signal and execs the command.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import sys
from collections.abc import Sequence

PR_SET_PDEATHSIG = 1  # linux/prctl.h
LINUX = sys.platform.startswith("linux")
SETPRIV = shutil.which("setpriv") if LINUX else None


def die_with_parent(parent: int) -> bool:
    """SIGKILL this process when its parent dies; False if the parent (pid `parent`) is gone
    already (it died before the signal was set, so the kernel will not send it)."""
    if LINUX:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    return os.getppid() == parent


def guarded(argv: Sequence[str]) -> list[str]:
    """`argv`, run so that it dies with this process (unchanged off Linux)."""
    if not LINUX:
        return list(argv)
    if SETPRIV is not None:
        return [SETPRIV, "--pdeathsig", "KILL", "--", *argv]
    return [sys.executable, "-m", "gateway.jobs.orphans", str(os.getpid()), *argv]


def main() -> None:  # python -m gateway.jobs.orphans PARENT_PID cmd [args...]
    if not die_with_parent(int(sys.argv[1])):
        os._exit(75)  # EX_TEMPFAIL: the gateway died while starting it; the job is retried
    os.execvp(sys.argv[2], sys.argv[2:])


if __name__ == "__main__":
    main()
