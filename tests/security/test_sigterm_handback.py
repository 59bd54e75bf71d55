"""SIGTERM always hands back: replicas on PostgreSQL that hold running resume jobs are stopped
with SIGTERM, again and again (30 hand-backs), beside a CPU hog, while a long-lived replica B
keeps running. Every job a stopped replica held must reach B within seconds of that replica's
exit (store.lease is the default 60 s: a lost hand-back would show as a minute's stall).

Every other round, another transaction holds one of the claimed job rows across the SIGTERM, for
longer than the stop's bound on the hand-back (an operator's `SELECT ... FOR UPDATE`, a slow
transaction: any hand-back that cannot finish in time). That replica must still not keep the
claim: it hands back the rest without waiting, and stays registered, so that B takes the held
job over once the row is free and the replica is gone (postgres/handover.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import asyncpg
import pytest

from gateway.testing import TEST_SECRET
from tests import pg
from tests.fakes.effects import FakeEffects
from tests.procs import AUTH, OPERATOR, Gateway, free_port, write_config

pytestmark = pytest.mark.subprocess
ROUNDS, STOPPED, JOBS = 6, 5, 3  # per round: STOPPED replicas, each deciding JOBS approvals
SHUTDOWN = "0.5s"  # server.shutdown_timeout: the slow launches are cut, their jobs handed back
HELD_FOR = 2.5  # seconds another transaction holds a claimed row after the SIGTERM
TAKEOVER = 6.0  # seconds after a stopped replica's exit by which B has finished its jobs


def _replica(tmp: Path, name: str, db_url: str, effects_url: str) -> Gateway:
    port = free_port()
    worker = f'[workers.agent]\nurl = "{effects_url}"\nallowed_hosts = ["127.0.0.1"]\ntimeout = "60s"\n'
    config = write_config(tmp / f"{name}.toml", db_url, port, worker)
    text = config.read_text().replace("[server]\n", f'[server]\nshutdown_timeout = "{SHUTDOWN}"\n', 1)
    config.write_text(text)
    return Gateway(config, port, tmp / f"{name}.log")


def _owner(gateway: Gateway) -> str:
    assert gateway.proc is not None
    return f"{socket.gethostname()}:{gateway.proc.pid}"  # the runtime's lease owner


@pytest.fixture
def hog() -> Iterator[None]:
    """One core kept busy for the whole test, as a full test run keeps it."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
async def receivers() -> AsyncIterator[tuple[FakeEffects, FakeEffects]]:
    """The stopped replicas' worker never answers in time (their launches are cut); B's at once."""
    slow, fast = FakeEffects(TEST_SECRET, delay=8.0), FakeEffects(TEST_SECRET)
    await slow.start()
    await fast.start()
    try:
        yield slow, fast
    finally:
        await fast.stop()
        await slow.stop()


async def _decide(http: aiohttp.ClientSession, gateway: Gateway, run: str) -> str:
    body = {"run_id": run, "step": "deploy", "title": "Deploy", "args": {"run": run}, "worker": "agent"}
    async with http.post(f"{gateway.url}/v1/suspend", json=body, headers=AUTH) as resp:
        assert resp.status == 201, await resp.text()
        approval_id: str = (await resp.json())["id"]
    decision = {"outcome": "approve", "by": "web:ops"}
    async with http.post(f"{gateway.url}/v1/approvals/{approval_id}/decision", json=decision, headers=OPERATOR) as resp:
        assert resp.status == 200, await resp.text()
    return approval_id


async def _held(db: asyncpg.Pool, owners: list[str], decided: set[str], within: float = 10.0) -> list[int]:
    """The running jobs the stopped replicas hold, once every decided job was claimed (B, which
    finishes its launches at once, may have taken some)."""
    deadline = time.monotonic() + within
    while True:
        rows = await db.fetch("SELECT id, approval_id, status, claimed_by FROM resume_jobs")
        mine = [r for r in rows if r["approval_id"] in decided]
        if (len(mine) == len(decided) and all(r["status"] != "queued" for r in mine)) or time.monotonic() > deadline:
            return [r["id"] for r in mine if r["status"] == "running" and r["claimed_by"] in owners]
        await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def _row_held(db_url: str, job_id: int) -> AsyncIterator[None]:
    """Another transaction holds the row of `job_id` while the context is open."""
    conn = await asyncpg.connect(db_url)
    try:
        async with conn.transaction():
            await conn.execute("SELECT 1 FROM resume_jobs WHERE id = $1 FOR UPDATE", job_id)
            yield
    finally:
        await conn.close()


async def _taken_over(db: asyncpg.Pool, jobs: list[int], owners: list[str], since: float) -> float:
    """Seconds until every one of `jobs` succeeded on another replica; fails after TAKEOVER."""
    while True:
        rows = await db.fetch("SELECT id, status, claimed_by FROM resume_jobs WHERE id = ANY($1::bigint[])", jobs)
        if all(r["status"] == "succeeded" for r in rows):
            return time.monotonic() - since
        stuck = [(r["id"], r["status"], r["claimed_by"]) for r in rows if r["claimed_by"] in owners]
        assert time.monotonic() - since < TAKEOVER, f"claims kept after SIGTERM: {stuck}"
        await asyncio.sleep(0.1)


async def _round(
    n: int, tmp: Path, db_url: str, db: asyncpg.Pool, slow: FakeEffects, http: aiohttp.ClientSession
) -> float:
    stopped = [_replica(tmp, f"r{n}-{i}", db_url, slow.url) for i in range(STOPPED)]
    await asyncio.gather(*(asyncio.to_thread(g.start) for g in stopped))
    owners = [_owner(g) for g in stopped]
    jobs: list[int] = []
    for batch in range(3):  # B may win every claim of a batch: then another
        runs = [f"r{n}-{i}-{j}-{batch}" for i in range(STOPPED) for j in range(JOBS)]
        decided = await asyncio.gather(*(_decide(http, stopped[k % STOPPED], run) for k, run in enumerate(runs)))
        jobs = await _held(db, owners, set(decided))
        if jobs:
            break
    assert jobs, "no stopped replica held a job"
    blocker = _row_held(db_url, jobs[0]) if n % 2 else contextlib.nullcontext()
    async with blocker:
        for g in stopped:
            assert g.proc is not None
            g.proc.send_signal(signal.SIGTERM)
        codes = await asyncio.gather(*(asyncio.to_thread(g.proc.wait, 15) for g in stopped if g.proc))
        exited = time.monotonic()
        assert codes == [0] * STOPPED, codes
        await asyncio.sleep(max(0.0, HELD_FOR - (time.monotonic() - exited)) if n % 2 else 0.0)
    return await _taken_over(db, jobs, owners, exited)


async def test_sigterm_always_hands_back_the_claims(
    pg_database: str, hog: None, receivers: tuple[FakeEffects, FakeEffects], tmp_path: Path
) -> None:
    slow, fast = receivers
    db_url = await pg.create_database("hitl_handback")
    b = _replica(tmp_path, "b", db_url, fast.url)
    started = time.monotonic()
    try:
        await asyncio.to_thread(b.start)
        db = await asyncpg.create_pool(db_url, min_size=1, max_size=3)
        try:
            async with aiohttp.ClientSession() as http:
                took = [await _round(n, tmp_path, db_url, db, slow, http) for n in range(ROUNDS)]
        finally:
            await db.close()
    finally:
        b.stop()
        await pg.drop_database(db_url)
    print(
        f"\n{ROUNDS * STOPPED} SIGTERM hand-backs in {time.monotonic() - started:.0f}s; jobs finished on B"
        f" {max(took):.2f}s at worst after the stopped replicas exited"
    )
