"""Which processes claiming work on a SQLite file are alive, proved by file locks the kernel
drops when a process dies, however it dies (kill -9 included):

- every claiming process (`serve`, and a channel's poller, which runs the same loops beside it)
  holds `flock(LOCK_EX)` on a file of its own, `<db>.claimers/<owner>.lock`;
- every `serve` also holds `<db>.lock`, exclusively: one serving process per file.

So a starting process knows, for each owner of a claim in the file (leased jobs, deliveries,
wake-ups), whether it is gone, and takes its claims over at once instead of waiting out
`store.lease`. A `serve` (holding the serve lock) counts as gone every owner that holds no
claimer lock; any other claimer only the owners whose claimer lock is free (proved gone): an
owner without one may be a process that never took one (a test, an older version).

A second `serve` on a file whose first one lives is refused, with one line naming the holder's
pid. Refused rather than shared: the SQLite store is built for one writing process (one writer
thread with group commit, no cross-process wake-ups); several serving processes are what the
PostgreSQL backend is for. CLI commands (`approvals list`, `jobs retry`...) claim nothing and
take no lock.

flock, not SQLite's own locks: those are POSIX record locks that SQLite takes and drops per
transaction (and that a process loses when it closes any descriptor of the file); on Linux flock
locks are independent of them, and held per open file.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from pathlib import Path

from gateway.core.errors import StoreInUse

__all__ = ["FileLock", "claimer_gone", "claimer_lock", "serve_lock"]


class FileLock:
    """An exclusive flock on one file, holding the pid of its holder."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_acquire(self) -> bool:
        """Take the lock; False if another open file (another process) holds it."""
        if self._fd is not None:
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return True

    def holder(self) -> str:
        with contextlib.suppress(OSError), open(self.path, encoding="utf-8", errors="replace") as f:
            return f.read(32).strip() or "?"
        return "?"

    def release(self, *, remove: bool = False) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                if remove:
                    os.unlink(self.path)  # before the unlock: nobody else can hold it meanwhile
                else:
                    os.ftruncate(fd, 0)
            os.close(fd)  # drops the lock


def serve_lock(db_path: str) -> FileLock:
    """The serve lock of `db_path`, taken; StoreInUse naming the live holder if another has it."""
    lock = FileLock(f"{db_path}.lock")
    if not lock.try_acquire():
        raise StoreInUse(
            f"another hitl-gateway serve (pid {lock.holder()}) is using {db_path};"
            " stop it first (one serving process per SQLite file; several replicas need PostgreSQL)"
        )
    return lock


def _claimer_path(db_path: str, owner: str) -> Path:
    return Path(f"{db_path}.claimers") / (re.sub(r"[^A-Za-z0-9_.-]", "_", owner) + ".lock")


def claimer_lock(db_path: str, owner: str) -> FileLock | None:
    """`owner`'s claimer lock, taken (None if this owner's lock is held already: the same owner
    name twice in one process, as tests do)."""
    path = _claimer_path(db_path, owner)
    path.parent.mkdir(exist_ok=True)
    lock = FileLock(str(path))
    return lock if lock.try_acquire() else None


def claimer_gone(db_path: str, owner: str, *, serving: bool) -> bool:
    """Whether the process that made `owner`'s claims is gone: its claimer lock is free (then its
    file is removed), or, for a `serve`, it never had one."""
    path = _claimer_path(db_path, owner)
    if not path.exists():
        return serving
    probe = FileLock(str(path))
    if not probe.try_acquire():
        return False
    probe.release(remove=True)
    return True
