"""The cycle on DBOS (PostgreSQL): an application process, as a DBOS user would deploy one, with a
small HTTP front (aiohttp) the bench's clients call, as they call our gateway's API:
`POST /start` starts workflow `cycle` under the client's id (step `post_card`, `DBOS.recv("press")`,
step `step`, then the step's UDP report: after the step's output is recorded), and `POST /press`
is `DBOS.send(id, data, "press")`; `t_decided` is when its 200 (after the send's commit) arrives.
The system database is a fresh PostgreSQL database (bench/pg.py `database()`).

python -m bench.peers.dbos_peer [--seconds 10] [--concurrency 64]   # prints one JSON line
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import subprocess
import sys
import time
from typing import Any

import aiohttp
from aiohttp import web

from bench.peers import harness


async def app(db_url: str, port: int) -> None:
    """The DBOS application process: the workflow, its steps, and the HTTP front on `port`."""
    from dbos import DBOS, SetWorkflowID

    http = aiohttp.ClientSession()

    @DBOS.step()
    async def post_card(job: dict[str, Any]) -> int:
        return await harness.post_card(http, job["api"], job["id"])

    @DBOS.step()
    async def step(job: dict[str, Any]) -> dict[str, Any]:
        return {"started": time.time(), **harness.work(job), "done": time.time()}

    @DBOS.workflow()
    async def cycle(job: dict[str, Any]) -> None:
        await post_card(job)
        data = await DBOS.recv_async("press", timeout_seconds=60)
        if data != f"a|{job['id']}|ok":  # the button of this workflow's own card only
            raise ValueError("press of another card")
        out = await step(job)
        harness.report(int(job["port"]), job["id"], out["started"], out["done"])

    DBOS(config={"name": "hitl-bench-peers", "system_database_url": db_url, "log_level": "WARNING"})
    DBOS.launch()
    handles: set[Any] = set()

    async def start(request: web.Request) -> web.Response:
        job = await request.json()
        with SetWorkflowID(job["id"]):
            handle = await DBOS.start_workflow_async(cycle, job)
        handles.add(handle)  # the task is the application's: keep it until it ends
        handle.task.add_done_callback(lambda _: handles.discard(handle))
        return web.json_response({"id": job["id"]}, status=201)

    async def press(request: web.Request) -> web.Response:
        body = await request.json()
        await DBOS.send_async(body["id"], body["data"], "press")
        return web.json_response({"ok": True})

    front = web.Application()
    front.router.add_post("/start", start)
    front.router.add_post("/press", press)
    runner = web.AppRunner(front, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    print("ready", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await runner.cleanup()
    await http.close()
    DBOS.destroy()


async def bench(db_url: str, seconds: float, concurrency: int) -> dict[str, Any]:
    from bench.server import free_port

    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.peers.dbos_peer", "--app", db_url, "--port", str(port),
        stdout=subprocess.PIPE, env=harness.env_with_path(),
    )  # fmt: skip
    api, runner, finished, transport, udp_port = await harness.fakes()
    base = f"http://127.0.0.1:{port}"
    try:
        assert proc.stdout is not None
        line = await proc.stdout.readline()
        if line.strip() != b"ready":
            raise RuntimeError(f"the DBOS application did not start: {line!r}")
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency * 2)) as http:

            async def start(wid: str, job: dict[str, Any]) -> None:
                async with http.post(f"{base}/start", json=job) as resp:
                    if resp.status != 201:
                        raise RuntimeError(f"start: {resp.status}")

            async def press(wid: str, data: str) -> None:
                async with http.post(f"{base}/press", json={"id": wid, "data": data}) as resp:
                    if resp.status != 200:
                        raise RuntimeError(f"press: {resp.status}")

            cycles = harness.PeerCycles(api, finished, udp_port, start, press)
            app_pid = proc.pid
            result = await harness.measure(
                cycles,
                seconds,
                concurrency,
                {"app": lambda: harness.tree_cpu([app_pid]), "postgres": lambda: harness.tree_cpu([], "postgres")},
            )
    finally:
        await harness.stop(proc)
        transport.close()
        await runner.cleanup()
    return {**result, **await pg_counts(db_url)}


async def pg_counts(url: str) -> dict[str, Any]:
    """As `bench.cycle.pg_counts`, after the application has exited: the transactions PostgreSQL
    counted on this database over the whole run, and the cycles whose workflow succeeded."""
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        await asyncio.sleep(1.0)  # a backend flushes its counters as it exits: let the last ones land
        cycles = await conn.fetchval(
            "SELECT COUNT(*) FROM dbos.workflow_status WHERE status = 'SUCCESS' AND name LIKE '%cycle'"
        )
        xacts = await conn.fetchval(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()"
        )
    finally:
        await conn.close()
    return {"pg_cycles": cycles, "pg_xacts": xacts}


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.peers.dbos_peer")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--app", metavar="DATABASE_URL", help=argparse.SUPPRESS)  # the application process itself
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.app:
        asyncio.run(app(args.app, args.port))
        return 0
    from bench import pg

    with pg.database("hitl_peers_dbos") as url:
        result = asyncio.run(bench(url, args.seconds, args.concurrency))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
