"""One serving process per SQLite file, proved by an exclusive lock on `<file>.lock`.

Every `serve` on a file holds `flock(LOCK_EX)` on its lock file for as long as it lives; the
kernel drops the lock when the process dies, however it dies (kill -9 included). So a `serve`
that gets the lock knows every claim in the file (leased jobs, deliveries, wake-ups) was made by
a process that is gone, and takes them all over at once instead of waiting out `store.lease`.

A second `serve` on a file whose first one lives is refused, with one line naming the holder's
pid. Refused rather than shared: the SQLite store is built for one writing process (one writer
thread with group commit, no cross-process wake-ups), and sharing would need a per-process
proof of life for every claim, which is what the PostgreSQL backend is for (several replicas).
CLI commands (`approvals list`, `jobs retry`...) do not take the lock: they claim nothing.

flock, not SQLite's own locks: those are POSIX record locks that SQLite takes and drops per
transaction, and on Linux flock locks are independent of them.
"""

from __future__ import annotations

import contextlib
import fcntl
import os

from gateway.core.errors import StoreInUse

__all__ = ["ServeLock"]


class ServeLock:
    def __init__(self, db_path: str) -> None:
        self.path = f"{db_path}.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise StoreInUse naming the live holder."""
        if self._fd is not None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise StoreInUse(
                f"another hitl-gateway serve (pid {holder}) is using {self.path.removesuffix('.lock')};"
                " stop it first (one serving process per SQLite file; several replicas need PostgreSQL)"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)  # drops the lock
