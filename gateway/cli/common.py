"""What every command that works on the store shares: a started Runtime, and JSON output."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
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
