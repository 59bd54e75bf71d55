"""b and c: the full cycle and the decision-to-worker latency, against a real gateway process.

One cycle: `POST /v1/suspend` (channel `telegram:CHAT`, worker `cycle`) -> the gateway's outbox
posts the card to the fake Telegram Bot API (real python-telegram-bot client) -> the bench reads
the card's signed Approve `callback_data` from the fake and POSTs the press to
`/webhooks/telegram` (secret-token header), which decides -> the worker loop runs the
`entrypoint` worker `bench.cycle_worker:step` in its process pool -> the step is journaled (SDK
`DurableRun.step`, over HTTP with the resume token) -> the worker reports over UDP. `concurrency`
clients each run cycles back to back; a cycle counts when it both starts after the warm-up and
ends before the stop.

c: `t_decided` is `time.time()` when the webhook's 200 (sent after the decision's commit) reaches
the bench; `t_start` is the worker function's first line. Same host, same clock. It is measured
under the c=64 load (queueing included) and alone (one cycle at a time).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bench.load import percentile, suspend_body
from bench.server import AUTH, Gateway
from tests.fakes.server import serve_local
from tests.fakes.telegram_api import FakeTelegramAPI, callback_update

TOKEN = "123456:BENCH-token_abc"
WEBHOOK_SECRET = "bench_hook-secret-0123456789"
CHAT = -1001234567890
ALICE = 111
HOOK_HEADERS = {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET, "Content-Type": "application/json"}


class Rendezvous:
    """Values keyed by approval id that may arrive before or after someone waits for them."""

    def __init__(self) -> None:
        self.early: dict[str, Any] = {}
        self.waiting: dict[str, asyncio.Future[Any]] = {}

    def put(self, key: str, value: Any) -> None:
        fut = self.waiting.pop(key, None)
        if fut is None:
            self.early[key] = value
        elif not fut.done():
            fut.set_result(value)

    async def get(self, key: str, within: float = 30.0) -> Any:
        if key in self.early:
            return self.early.pop(key)
        fut = self.waiting[key] = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(within):
                return await fut
        finally:
            self.waiting.pop(key, None)


class CardWatch(FakeTelegramAPI):
    """The fake Bot API, telling the bench which message and Approve button each card got."""

    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.cards = Rendezvous()
        self.sent = 0  # every sendMessage answered (cards posted after their decision have no buttons)
        self.posts: dict[str, list[tuple[int, str]]] = {}  # approval id -> every card message of it

    def _m_sendMessage(self, params: dict[str, Any]) -> Any:
        result = super()._m_sendMessage(params)
        if isinstance(result, dict):
            self.sent += 1
            for row in (params.get("reply_markup") or {}).get("inline_keyboard", []):
                for button in row:
                    data = button.get("callback_data") or ""
                    if data.startswith("a|"):
                        self.cards.put(data.split("|")[1], (result["message_id"], data))
                        self.posts.setdefault(data.split("|")[1], []).append((result["message_id"], data))
        self.calls.clear()  # the bench keeps no call history (memory); messages are kept for edits
        self.answered.clear()  # nor the callback ids answered (each press has its own)
        return result

    async def serve(self) -> web.AppRunner:
        """Listen on a free loopback port; `base_url` is then the Bot API base URL for the gateway."""
        runner, root = await serve_local(self.app, access_log=None)
        self.base_url = f"{root}/bot"
        return runner


class Finished(asyncio.DatagramProtocol):
    """UDP from the worker: `approval_id t_start t_done`."""

    def __init__(self) -> None:
        self.done = Rendezvous()

    def datagram_received(self, data: bytes, addr: Any) -> None:
        approval, start, end = data.decode().split()
        self.done.put(approval, (float(start), float(end)))


def press(update_id: int, message_id: int, data: str) -> dict[str, Any]:
    alice = {"id": ALICE, "is_bot": False, "first_name": "Alice", "username": "alice"}
    return callback_update(update_id, str(update_id), alice, CHAT, message_id, data)


def config(base_url: str, pool_size: int, worker: str = "cycle", extra: str = "") -> str:
    """The gateway's Telegram section (the fake Bot API) and the entrypoint worker `worker`."""
    return f"""
[telegram]
bot_token = "{TOKEN}"
webhook_secret = "{WEBHOOK_SECRET}"
base_url = "{base_url}"
approvers = [{ALICE}]
chats = [{CHAT}]

[workers.{worker}]
entrypoint = "bench.cycle_worker:step"
pool_size = {pool_size}
{extra}"""


class Cycles:
    """Cycles against one gateway, or several replicas on one database: client `i` talks to
    replica `i % n` for its suspends and presses (the card and the step may be any replica's)."""

    def __init__(self, gws: list[Gateway], api: CardWatch, finished: Finished, state: dict[str, Any]) -> None:
        self.gws, self.api, self.finished, self.state = gws, api, finished, state
        # 0: press the moment the fake Bot API answered, often before the gateway recorded the
        # post, so the press adopts the card (a transaction and a sync more than a person causes)
        self.press_delay = 0.0
        self.update_ids = itertools.count(1)
        self.tag = uuid.uuid4().hex[:8]
        self.n = itertools.count()

    async def one(self, http: aiohttp.ClientSession, gw: Gateway) -> tuple[float, float, float]:
        """One full cycle; returns (seconds, decision -> worker start, decision -> step done), in seconds."""
        t0 = time.perf_counter()
        body = suspend_body(
            f"cycle-{self.tag}-{next(self.n)}", channels=[f"telegram:{CHAT}"], worker="cycle", state=self.state
        )
        async with http.post(f"{gw.url}/v1/suspend", json=body, headers=AUTH) as resp:
            if resp.status != 201:
                raise RuntimeError(f"suspend: {resp.status} {await resp.text()}")
            approval_id = (await resp.json())["id"]
        message_id, data = await self.api.cards.get(approval_id)
        if self.press_delay:  # a person reads the card first: the post's answer is recorded by then
            await asyncio.sleep(self.press_delay)
        update = press(next(self.update_ids), message_id, data)
        async with http.post(f"{gw.url}/webhooks/telegram", data=json.dumps(update), headers=HOOK_HEADERS) as resp:
            body = await resp.read()
            decided = time.time()
            if resp.status != 200:
                raise RuntimeError(f"webhook: {resp.status}")
        # Telegram runs the method the 200 carries (the press's answer), as if the gateway had called it
        call = await self.api.apply_webhook_reply(json.loads(body), update)
        if call is not None and call.error is not None:
            raise RuntimeError(f"webhook reply {call.method}: {call.error}")
        started, done = await self.finished.done.get(approval_id)
        return time.perf_counter() - t0, started - decided, done - decided

    async def load(self, concurrency: int, seconds: float, warmup: float) -> dict[str, Any]:
        """`concurrency` clients run cycles back to back. The rate counts the cycles that END in
        the measured window (after the warm-up); latencies come from the cycles that also START in it."""
        latencies: list[float] = []
        to_worker: list[float] = []
        to_done: list[float] = []
        ended = errors = completed = 0
        measure_from = time.perf_counter() + warmup
        stop_at = measure_from + seconds

        async def client(http: aiohttp.ClientSession, gw: Gateway) -> None:
            nonlocal errors, ended, completed
            while (t0 := time.perf_counter()) < stop_at:
                try:
                    took, wait, done = await self.one(http, gw)
                except (RuntimeError, TimeoutError, aiohttp.ClientError):
                    errors += 1
                    continue
                completed += 1
                if measure_from <= t0 + took <= stop_at:
                    ended += 1
                    if t0 >= measure_from:
                        latencies.append(took * 1000)
                        to_worker.append(wait * 1000)
                        to_done.append(done * 1000)

        connector = aiohttp.TCPConnector(limit=concurrency * 2)
        async with aiohttp.ClientSession(connector=connector) as http:
            await asyncio.gather(*(client(http, self.gws[i % len(self.gws)]) for i in range(concurrency)))

        def pct(values: list[float], q: float) -> float | None:
            return round(percentile(values, q), 2) if values else None

        return {
            "rate": round(ended / seconds, 1),
            "cycles": ended,
            "completed": completed,  # warm-up and tail too: what the CPU over the whole load paid for
            "errors": errors,
            "samples": len(latencies),
            "cycle_p50_ms": pct(latencies, 50),
            "cycle_p99_ms": pct(latencies, 99),
            "worker_p50_ms": pct(to_worker, 50),
            "worker_p99_ms": pct(to_worker, 99),
            "step_done_p50_ms": pct(to_done, 50),
        }


async def _run(
    work: Path,
    store_url: str | None,
    seconds: float,
    concurrency: int,
    pool_size: int,
    profile: Path | None = None,
    replicas: int = 1,
    tree: Path | None = None,
    press_delay: float = 0.0,
    extra: str = "",
    log_level: str = "WARNING",
) -> dict[str, Any]:
    if replicas > 1 and store_url is None:
        raise ValueError("replicas share one database: PostgreSQL only")
    api = CardWatch(TOKEN)
    runner = await api.serve()
    finished = Finished()
    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(lambda: finished, ("127.0.0.1", 0))
    udp_port = transport.get_extra_info("sockname")[1]
    gws = []
    for i in range(replicas):
        home = work if replicas == 1 else work / f"replica{i}"
        await asyncio.to_thread(home.mkdir, parents=True, exist_ok=True)
        gw = Gateway(home, home / "gateway.db", extra_config=config(api.base_url, pool_size, extra=extra))
        gw.log_level = log_level
        gw.store_url = store_url
        if tree is not None:  # another checkout's gateway (and worker side): an A/B of two trees
            gw.root = tree
        gws.append(gw)
    for gw in gws:
        await asyncio.to_thread(gw.start)
    try:
        cycles = Cycles(gws, api, finished, {"port": udp_port})
        cycles.press_delay = press_delay
        cpu0 = sum(gw.cpu_seconds() for gw in gws)
        alone = await cycles.load(1, min(3.0, seconds), warmup=1.0)  # also warms the worker pool up
        alone_cpu = (sum(gw.cpu_seconds() for gw in gws) - cpu0) / max(1, alone["completed"])
        before, bench0 = cpu_split(gws), time.process_time()
        spy = _py_spy(gws[0], profile, seconds + 2) if profile else None
        loaded = await cycles.load(concurrency, seconds, warmup=3.0)
        after, bench1 = cpu_split(gws), time.process_time()
        if spy is not None:
            await asyncio.to_thread(spy.wait, 60)
        per = max(1, loaded["completed"])  # the CPU is read around the whole load, warm-up and tail included
        loaded["server_cpu_us"] = round((after["gateway"] - before["gateway"]) / per * 1e6, 1)
        loaded["server_system_cpu_us"] = round((after["gateway_system"] - before["gateway_system"]) / per * 1e6, 1)
        loaded["worker_cpu_us"] = round((after["workers"] - before["workers"]) / per * 1e6, 1)
        loaded["postgres_cpu_us"] = round((after["postgres"] - before["postgres"]) / per * 1e6, 1)
        loaded["bench_cpu_us"] = round((bench1 - bench0) / per * 1e6, 1)
        loaded["alone_server_cpu_us"] = round(alone_cpu * 1e6, 1)
    finally:
        for gw in gws:
            await asyncio.to_thread(gw.stop)
        transport.close()
        await runner.cleanup()
    out = {**loaded, "alone_worker_p50_ms": alone["worker_p50_ms"], "alone_worker_p99_ms": alone["worker_p99_ms"]}
    out["alone_cycle_p50_ms"] = alone["cycle_p50_ms"]
    out["replicas"] = replicas
    if store_url is None:
        out.update(journal_check(work / "gateway.db"))
    else:
        out.update(await pg_counts(store_url))
    return out


def _proc_cpu(stat: str) -> tuple[int, float]:
    """(parent pid, user + system CPU seconds) from a /proc/PID/stat line."""
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _system_cpu(stat: str) -> float:
    """The system (kernel) part of a /proc/PID/stat line's CPU seconds: sockets, pipes, wake-ups."""
    return int(stat.rsplit(")", 1)[1].split()[12]) / os.sysconf("SC_CLK_TCK")


def processes() -> Iterator[tuple[int, int, float, str]]:
    """(pid, parent pid, CPU seconds so far, its /proc stat line) of every process now."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        parent, cpu = _proc_cpu(stat)
        yield int(entry.name), parent, cpu, stat


def cpu_split(gws: list[Gateway]) -> dict[str, float]:
    """CPU seconds so far of the gateway processes (and the system part of theirs), of their
    children (the entrypoint pool's workers), and of every PostgreSQL process on the machine
    (quiet machine: this run's)."""
    out = {"gateway": 0.0, "gateway_system": 0.0, "workers": 0.0, "postgres": 0.0}
    pids = {gw.proc.pid for gw in gws if gw.proc is not None}
    for pid, parent, cpu, stat in processes():
        if pid in pids:
            out["gateway"] += cpu
            out["gateway_system"] += _system_cpu(stat)
        elif parent in pids:
            out["workers"] += cpu
        elif "(postgres)" in stat:
            out["postgres"] += cpu
    return out


async def _idle(work: Path, url: str) -> dict[str, Any]:
    """A gateway started and stopped with no cycle: the transactions of a start and a stop."""
    await asyncio.to_thread(work.mkdir, parents=True, exist_ok=True)
    api = CardWatch(TOKEN)
    runner = await api.serve()
    gw = Gateway(work, work / "gateway.db", extra_config=config(api.base_url, 1))
    gw.store_url = url
    await asyncio.to_thread(gw.start)
    await asyncio.sleep(2.0)
    await asyncio.to_thread(gw.stop)
    await runner.cleanup()
    return await pg_counts(url)


async def pg_counts(url: str) -> dict[str, Any]:
    """What PostgreSQL counted for this database over the whole run (its backends have exited, so
    their statistics are flushed), per completed cycle: transactions (`pg_stat_database`) and
    index or sequential scans of `approvals` (`pg_stat_user_tables`: a read of an approval row)."""
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        await asyncio.sleep(1.0)  # a backend flushes its counters as it exits: let the last ones land
        cycles = await conn.fetchval("SELECT COUNT(*) FROM journal WHERE status = 'succeeded'")
        xacts = await conn.fetchval(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()"
        )
        scans = await conn.fetchval(
            "SELECT COALESCE(idx_scan, 0) + COALESCE(seq_scan, 0) FROM pg_stat_user_tables WHERE relname = 'approvals'"
        )
    finally:
        await conn.close()
    return {"pg_cycles": cycles, "pg_xacts": xacts, "pg_approval_scans": scans}


def _py_spy(gw: Gateway, out: Path, seconds: float) -> subprocess.Popen[bytes]:
    """py-spy on the serving process (Python CPU only: --gil) during the loaded phase."""
    assert gw.proc is not None
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    cmd = [spy, "record", "--pid", str(gw.proc.pid), "--format", "raw", "--output", str(out), "--gil"]
    cmd += ["--duration", str(int(seconds)), "--rate", "250", "--nonblocking"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def journal_check(db: Path) -> dict[str, int]:
    """Every decided approval: one journaled step and one succeeded job (after a clean stop)."""
    with sqlite3.connect(db) as conn:
        decided = conn.execute("SELECT COUNT(*) FROM approvals WHERE status = 'approved'").fetchone()[0]
        steps = conn.execute("SELECT COUNT(*) FROM journal WHERE status = 'succeeded'").fetchone()[0]
        ok = conn.execute("SELECT COUNT(*) FROM resume_jobs WHERE status = 'succeeded'").fetchone()[0]
    return {"decided": decided, "journaled": steps, "jobs_succeeded": ok}


def run(
    work: Path,
    *,
    seconds: float = 10.0,
    concurrency: int = 64,
    pool_size: int = 4,
    store_url: str | None = None,
    profile: Path | None = None,
    replicas: int = 1,
    tree: Path | None = None,
    press_delay: float = 0.0,
    extra: str = "",
    log_level: str = "WARNING",
) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    return asyncio.run(
        _run(work, store_url, seconds, concurrency, pool_size, profile, replicas, tree, press_delay, extra, log_level)
    )


def main() -> int:
    """`python -m bench.cycle [--profile]`: one b/c run, optionally with py-spy on the gateway."""
    import argparse
    import tempfile

    from bench.profile import summarize

    p = argparse.ArgumentParser(prog="python -m bench.cycle")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--pool-size", type=int, default=4)
    p.add_argument("--profile", action="store_true", help="py-spy --gil on the gateway: bench/profile-cycle.txt")
    p.add_argument("--pg", action="store_true", help="on a fresh PostgreSQL database (HITL_TEST_POSTGRES_URL)")
    p.add_argument("--replicas", type=int, default=1, help="gateway processes on the one database (with --pg)")
    p.add_argument("--press-delay", type=float, default=0.0, help="seconds between the card and its press")
    p.add_argument("--resume-concurrency", type=int, help="[scheduler] resume_concurrency (default: the gateway's)")
    p.add_argument("--resume-prefetch", type=int, help="[scheduler] resume_prefetch (default: the gateway's)")
    p.add_argument("--log-level", default="WARNING", help="the gateway's [server] log_level (its default is INFO)")
    p.add_argument("--tree", type=Path, help="run another checkout's gateway (an A/B: `git worktree add`)")
    args = p.parse_args()
    out = Path(__file__).with_name("profile-cycle.txt") if args.profile else None
    keys = {"resume_concurrency": args.resume_concurrency, "resume_prefetch": args.resume_prefetch}
    given = "".join(f"{key} = {value}\n" for key, value in keys.items() if value is not None)
    scheduler = f"[scheduler]\n{given}" if given else ""
    with tempfile.TemporaryDirectory(prefix="hitl-cycle-") as tmp:

        def one(store_url: str | None = None) -> dict[str, Any]:
            return run(
                Path(tmp),
                seconds=args.seconds,
                concurrency=args.concurrency,
                pool_size=args.pool_size,
                profile=out,
                store_url=store_url,
                replicas=args.replicas,
                tree=args.tree,
                press_delay=args.press_delay,
                extra=scheduler,
                log_level=args.log_level,
            )

        if args.pg:
            from bench import pg

            with pg.database() as url:
                result = one(url)
            with pg.database() as url:  # what a start and a stop cost alone, taken off the per-cycle figures
                idle = asyncio.run(_idle(Path(tmp) / "idle", url))
            n = max(1, result["pg_cycles"])
            result["pg_xacts_per_cycle"] = round((result["pg_xacts"] - args.replicas * idle["pg_xacts"]) / n, 1)
            result["pg_approval_scans_per_cycle"] = round(
                (result["pg_approval_scans"] - args.replicas * idle["pg_approval_scans"]) / n, 1
            )
        else:
            result = one()
    print(json.dumps(result))
    if out is not None and out.exists():
        print(summarize(out, 30))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
