"""`python -m tests.fakes.failing_serve MODE --config F serve`: `hitl-gateway` whose background
loops have failed (the outbox and worker loops raise at once), for the shutdown tests.

MODE `failed`: nothing else is wrong. MODE `stuck`: also, closing the resume-job launchers never
returns, and a non-daemon thread never ends (the interpreter's exit would wait for it forever).
"""

from __future__ import annotations

import asyncio
import sys
import threading

from gateway.cli.main import main
from gateway.delivery.outbox import OutboxRunner
from gateway.jobs.worker import WorkerRunner


async def _fail(self: object) -> None:
    await asyncio.sleep(0.1)
    raise RuntimeError("this loop failed")


async def _never(self: object) -> None:
    await asyncio.Event().wait()


if __name__ == "__main__":
    mode = sys.argv.pop(1)
    OutboxRunner.run_forever = _fail  # type: ignore[method-assign]
    WorkerRunner.run_forever = _fail  # type: ignore[method-assign]
    if mode == "stuck":
        WorkerRunner.close = _never  # type: ignore[method-assign]
        threading.Thread(target=threading.Event().wait, name="never-ends", daemon=False).start()
    sys.exit(main())
