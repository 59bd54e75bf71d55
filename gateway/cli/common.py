"""What every command that works on the store shares: a started Runtime, and JSON output."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from gateway.settings import Settings


async def with_runtime(settings: Settings, fn: Callable[[Any], Awaitable[int]]) -> int:
    """Run `fn(runtime)` on a started Runtime with no background loops, then stop it."""
    from gateway.runtime import Runtime  # the runtime loads channels: only for commands that need it

    rt = Runtime(settings)
    await rt.start(background=False)
    try:
        return await fn(rt)
    finally:
        await rt.stop()


def dump(data: Any) -> None:
    print(json.dumps(data, indent=2, sort_keys=True, default=str))


def table(headers: list[str], rows: list[list[str]]) -> None:
    """Columns padded to their widest cell (the last one left ragged), two spaces apart."""
    cells = [headers, *rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers) - 1)]
    for r in cells:
        print("  ".join([*(c.ljust(w) for c, w in zip(r, widths, strict=False)), r[-1]]).rstrip())


def program(argv0: str | None = None) -> str:
    """This command as a printed next step must spell it to run as printed: `hitl-gateway` when
    that name on the PATH is this very program (`make install` put it there), else the path it was
    started by (`.venv/bin/hitl-gateway` from a checkout)."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    if Path(argv0).name != "hitl-gateway":  # `python -m gateway.cli`, or main() called in process
        return "hitl-gateway"
    found = shutil.which("hitl-gateway")
    try:
        if found is not None and os.path.samefile(found, argv0):
            return "hitl-gateway"
    except OSError:
        pass
    return shlex.quote(argv0)
