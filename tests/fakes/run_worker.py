"""A gateway worker process for crash tests: `python run_worker.py CONFIG` runs one round."""

from __future__ import annotations

import asyncio
import sys

from gateway.config import load_settings
from gateway.runtime import Runtime


async def main() -> None:
    rt = Runtime(load_settings(sys.argv[1], env={}), owner="doomed")
    await rt.start(background=False)
    try:
        await rt.worker.run_once()
    finally:
        await rt.stop()


asyncio.run(main())
