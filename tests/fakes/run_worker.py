"""A gateway worker process for crash tests: `python run_worker.py CONFIG [serve]` runs one round;
with `serve` it first takes the SQLite file's serve lock, as `hitl-gateway serve` does."""

from __future__ import annotations

import asyncio
import sys

from gateway.config import load_settings
from gateway.runtime import Runtime


async def main() -> None:
    rt = Runtime(load_settings(sys.argv[1], env={}), owner="doomed")
    await rt.start(background=False)
    if sys.argv[2:] == ["serve"]:
        await rt.store.take_over(rt.owner, rt.clock.now(), exclusive=True)
    try:
        await rt.worker.run_once()
    finally:
        await rt.stop()


asyncio.run(main())
