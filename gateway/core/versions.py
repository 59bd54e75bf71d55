"""Versioned resumes (pure): may a worker resume a run suspended under some code version?

A suspend records the agent's `code_version`; a worker that declares `accepts = ["2.*"]`
(fnmatch globs) resumes only a matching one. A run from other code (an old release, a changed
args schema) is not launched: its job fails with `version_mismatch` naming both sides, and an
operator retries it once a worker that accepts it is configured.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

__all__ = ["VERSION_MISMATCH", "version_mismatch"]

VERSION_MISMATCH = "version_mismatch"


def version_mismatch(code_version: str | None, worker: str, accepts: Sequence[str]) -> str | None:
    """None if the worker may resume it (no `accepts`: any version), else why not."""
    if not accepts:
        return None
    if code_version is not None and any(fnmatchcase(code_version, pattern) for pattern in accepts):
        return None
    suspended = f"code_version {code_version!r}" if code_version is not None else "no code_version"
    return f"{VERSION_MISMATCH}: the run was suspended with {suspended}; worker {worker!r} accepts {', '.join(accepts)}"
