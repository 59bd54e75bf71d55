"""What every peer's cycle shares with ours: the same fake Bot API (CardWatch), the same UDP report
of the step, the same closed-loop clients and counting (`bench.cycle.Cycles.load`), and CPU per
cycle read from /proc.

A peer's cycle: the client starts a workflow with an id of its own -> the workflow's first step
posts a card (an HTTP POST of `sendMessage` with one Approve button) to CardWatch -> the client
reads the button's `callback_data` and delivers it as the peer's message (`press`) ->
`t_decided` is when that delivery call returns -> the workflow's second step runs and the step's
start and end times reach the client over UDP, as bench/cycle_worker.py does for ours.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import aiohttp

from bench.cycle import CHAT, TOKEN, CardWatch, Cycles, Finished

_udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)


def card(wid: str) -> dict[str, Any]:
    """The `sendMessage` body a peer's first step posts: one Approve button whose data names the workflow."""
    button = {"text": "Approve", "callback_data": f"a|{wid}|ok"}
    return {"chat_id": CHAT, "text": f"Approve cycle {wid}?", "reply_markup": {"inline_keyboard": [[button]]}}


async def post_card(http: aiohttp.ClientSession, api_url: str, wid: str) -> int:
    """The first step's work: post the card to the fake Bot API; the message id."""
    async with http.post(f"{api_url}{TOKEN}/sendMessage", json=card(wid)) as resp:
        resp.raise_for_status()
        return int((await resp.json())["result"]["message_id"])


def report(port: int, wid: str, started: float, done: float) -> None:
    """The second step's report, in bench/cycle_worker.py's format: `id t_start t_done`."""
    _udp.sendto(f"{wid} {started:.6f} {done:.6f}".encode(), ("127.0.0.1", port))


def work(args: dict[str, Any]) -> dict[str, Any]:
    """The step's own work, the same as bench/cycle_worker.py's `_work`."""
    return {"done": True, "n": args.get("n")}


Start = Callable[[str, dict[str, Any]], Awaitable[None]]
Press = Callable[[str, str], Awaitable[None]]


class PeerCycles(Cycles):
    """`bench.cycle.Cycles` with the peer's start and press in place of the gateway's HTTP calls,
    so that a peer's cycles are counted by the very same `load`."""

    def __init__(self, api: CardWatch, finished: Finished, udp_port: int, start: Start, press: Press) -> None:
        super().__init__([None], api, finished, {"port": udp_port})  # type: ignore[list-item]
        self.start, self.press_ = start, press

    async def one(self, http: aiohttp.ClientSession, gw: Any) -> tuple[float, float, float]:
        t0 = time.perf_counter()
        wid = f"c{self.tag}-{next(self.n)}"
        await self.start(wid, {"id": wid, "api": self.api.base_url, "port": self.state["port"], "n": 1})
        _, data = await self.api.cards.get(wid)
        await self.press_(wid, data)
        decided = time.time()
        started, done = await self.finished.done.get(wid)
        return time.perf_counter() - t0, started - decided, done - decided


def tree_cpu(roots: Iterable[int], name: str | None = None) -> float:
    """CPU seconds so far of the processes `roots`, their children, and (with `name`) every
    process of that name on the machine (PostgreSQL's backends: a quiet machine's are this run's)."""
    from bench.cycle import processes

    roots = set(roots)
    return sum(
        cpu
        for pid, parent, cpu, stat in processes()
        if pid in roots or parent in roots or (name is not None and f"({name})" in stat)
    )


async def measure(
    cycles: PeerCycles, seconds: float, concurrency: int, cpu: dict[str, Callable[[], float]]
) -> dict[str, Any]:
    """As `bench.cycle._run`: 3 s one at a time (also the warm-up), then `concurrency` clients with a
    3 s warm-up; CPU per loaded cycle of each named part (`cpu`), and of this client process."""
    alone = await cycles.load(1, min(3.0, seconds), warmup=1.0)
    before, bench0 = {k: f() for k, f in cpu.items()}, time.process_time()
    loaded = await cycles.load(concurrency, seconds, warmup=3.0)
    after, bench1 = {k: f() for k, f in cpu.items()}, time.process_time()
    per = max(1, loaded["completed"])  # the CPU is read around the whole load, warm-up and tail included
    for key in cpu:
        loaded[f"{key}_cpu_us"] = round((after[key] - before[key]) / per * 1e6, 1)
    loaded["bench_cpu_us"] = round((bench1 - bench0) / per * 1e6, 1)
    loaded["alone_worker_p50_ms"] = alone["worker_p50_ms"]
    loaded["alone_step_done_p50_ms"] = alone["step_done_p50_ms"]
    loaded["alone_cycle_p50_ms"] = alone["cycle_p50_ms"]
    return loaded


async def fakes() -> tuple[CardWatch, Any, Finished, Any, int]:
    """CardWatch on a free port and the UDP listener: (api, its runner, finished, transport, udp port)."""
    api = CardWatch(TOKEN)
    runner = await api.serve()
    finished = Finished()
    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(lambda: finished, ("127.0.0.1", 0))
    return api, runner, finished, transport, int(transport.get_extra_info("sockname")[1])


async def stop(proc: asyncio.subprocess.Process, within: float = 20.0) -> None:
    """SIGTERM, then SIGKILL if it has not exited `within` seconds."""
    if proc.returncode is not None:
        return
    proc.terminate()
    try:
        async with asyncio.timeout(within):
            await proc.wait()
    except TimeoutError:
        proc.kill()
        await proc.wait()


def env_with_path() -> dict[str, str]:
    """This process's environment for a child Python that imports bench/ and tests/ from this tree."""
    root = str(Path(__file__).resolve().parents[2])
    paths = [root, os.path.join(root, "sdk"), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}
