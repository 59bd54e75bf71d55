"""In-process suspend cost: 3,000 suspends (batches of 200 at once) on a fresh SQLite file, no
HTTP, CPU and wall time per suspend. Point it at trees to compare (the A/B of issue 19's chain):

    python bench/suspend_inproc.py /tmp/before /tmp/after /tmp/before /tmp/after

Each tree runs in its own interpreter, with that tree first on sys.path.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BATCH, BATCHES = 200, 15


async def measure() -> str:
    from gateway.runtime import Runtime
    from gateway.service.approvals import SuspendRequest
    from gateway.testing import make_settings

    rt = Runtime(make_settings(f"sqlite:///{Path(tempfile.mkdtemp()) / 'bench.db'}"), owner="bench")
    await rt.start(background=False)

    async def batch(offset: int) -> None:
        requests = (
            SuspendRequest(run_id=f"r{offset + i}", step="s", title="t", args={"amount": i}, channels=("web",))
            for i in range(BATCH)
        )
        await asyncio.gather(*(rt.service.suspend(r) for r in requests))

    await batch(0)  # warm
    cpu, wall = time.process_time(), time.perf_counter()
    for k in range(1, BATCHES + 1):
        await batch(k * BATCH)
    n = BATCH * BATCHES
    cpu_us, wall_us = (time.process_time() - cpu) / n * 1e6, (time.perf_counter() - wall) / n * 1e6
    await rt.stop()
    return f"cpu {cpu_us:.1f} us/suspend, wall {wall_us:.1f} us/suspend"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--here":
        print(asyncio.run(measure()))
        return
    for tree in sys.argv[1:] or ["."]:
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                f"import sys; sys.path.insert(0, {tree!r}); sys.argv = ['x', '--here'];"
                f" import runpy; runpy.run_path({__file__!r}, run_name='__main__')",
            ],
            capture_output=True,
            text=True,
            cwd=tempfile.gettempdir(),
            check=True,
        )
        print(f"{tree}: {out.stdout.strip()}")


if __name__ == "__main__":
    main()
