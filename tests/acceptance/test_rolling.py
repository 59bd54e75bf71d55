"""A rolling deploy: three `hitl-gateway serve` replicas on PostgreSQL, restarted one at a time
under a steady load of suspends, presses (API, signed token, cancel, Slack button) and 1 s
timeouts; once with SIGTERM (what Kubernetes sends), once with SIGKILL (a grace period run out,
an OOM kill). `store.lease` is the default 60 s: nothing here waits it out.

Must hold afterwards (read from the database, the Slack fake and the worker's receiver):
- no acknowledged approval is lost, and each has exactly one decision event;
- every decision has exactly one resume job, which succeeded once (one `job_succeeded`), and its
  effect was applied once; with SIGTERM no job was even launched twice (running jobs finish
  within server.shutdown_timeout, unstarted ones are handed back);
- every card (web, Slack) was posted once and synced to the decision: no buttons left;
- the worst decision-to-worker-start stall: at most 1 s with SIGTERM, 5 s with SIGKILL. A job's
  stall is from its decision to its first launch, and, when its replica was killed mid-launch,
  from the kill to the launch that took over. Printed, with the takeover of deadlines.

Also: a live replica stalled (SIGSTOP) for longer than the heartbeat's staleness keeps its
running job; it is launched once (its advisory lock proves it alive).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import signal
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest

from gateway.testing import TEST_SECRET
from tests.acceptance.test_replicas import (
    AUTH,
    PRESSES,
    SLACK_CHANNEL,
    Chats,
    Cluster,
    _json,
    _send,
    _settled,
    _start,
    _wait_ready,
    chats,
    three_replicas,
)
from tests.fakes.effects import FakeEffects

__all__ = ["chats"]  # the fixture, shared with test_replicas

pytestmark = pytest.mark.subprocess
CHANNELS = ("web", f"slack:{SLACK_CHANNEL}")  # Slack finds a card whose post was cut short by a kill
KINDS = {"api": 3, "token": 3, "cancel": 1, "slack": 3}
SUSPEND_EVERY = 0.12  # seconds: ~8 suspends a second, a third of them with a 1 s deadline
EFFECT_DELAY = 0.3
SHUTDOWN = "5s"  # server.shutdown_timeout: a running job (0.3 s) always finishes within it
MAX_STALL = {"SIGTERM": 1.0, "SIGKILL": 5.0}
FINAL = ("approved", "rejected", "cancelled", "timed_out")
EXTRA = {"HITL_SERVER_SHUTDOWN_TIMEOUT": SHUTDOWN, "HITL_WORKERS_AGENT_RETRY_BASE": "0.2s"}


@dataclass
class Roll:
    """What the load acknowledged, and when each replica was stopped (wall time, by owner)."""

    approvals: list[dict[str, Any]] = field(default_factory=list)
    stopped: dict[str, float] = field(default_factory=dict)
    running: bool = True


@pytest.fixture
async def effects() -> AsyncIterator[FakeEffects]:
    fake = FakeEffects(TEST_SECRET, delay=EFFECT_DELAY)
    await fake.start()
    try:
        yield fake
    finally:
        await fake.stop()


@pytest.fixture
async def cluster(pg_database: str, chats: Chats, effects: FakeEffects, tmp_path: Path) -> AsyncIterator[Cluster]:
    async with three_replicas("hitl_rolling", chats, effects, tmp_path, EXTRA) as cluster:
        yield cluster


async def _suspend(cluster: Cluster, session: aiohttp.ClientSession, i: int) -> dict[str, Any]:
    body: dict[str, Any] = {
        "run_id": f"roll-{i}",
        "step": "deploy",
        "title": f"Deploy build {i}",
        "args": {"build": i},
        "channels": list(CHANNELS),
        "worker": "agent",
        "idempotency_key": f"roll-{i}",
    }
    if i % 3 == 0:
        body["policy"] = "short_approve" if i % 2 else "short_reject"
    status, answer = await _send(
        cluster, session, lambda base: session.post(f"{base}/v1/suspend", json=body, headers=AUTH)
    )
    assert status in (200, 201), answer
    return answer  # type: ignore[no-any-return]


async def _press(cluster: Cluster, session: aiohttp.ClientSession, a: dict[str, Any]) -> None:
    kind = random.choices(list(KINDS), list(KINDS.values()))[0]
    outcome = random.choice(["approve", "reject"])
    status, body = await _send(cluster, session, lambda base: PRESSES[kind](cluster, session, base, a, outcome))
    assert status in (200, 409), (kind, status, body)


async def _load(cluster: Cluster, session: aiohttp.ClientSession, roll: Roll) -> None:
    """A suspend every SUSPEND_EVERY seconds, each pressed 0.2-1.5 s later (a short one may time
    out first), until `roll.running` turns false."""
    pressing: set[asyncio.Task[None]] = set()
    i = 0

    async def press_later(a: dict[str, Any]) -> None:
        await asyncio.sleep(random.uniform(0.2, 1.5))
        await _press(cluster, session, a)

    while roll.running:
        a = await _suspend(cluster, session, i)
        roll.approvals.append(a)
        task = asyncio.create_task(press_later(a))
        pressing.add(task)
        task.add_done_callback(pressing.discard)
        i += 1
        await asyncio.sleep(SUSPEND_EVERY)
    await asyncio.gather(*pressing)


async def _restart_each(cluster: Cluster, tmp: Path, sig: signal.Signals, roll: Roll) -> None:
    """Stop replica 0, start its successor, wait until it is ready; then 1, then 2."""
    async with aiohttp.ClientSession() as session:
        for i in range(3):
            await asyncio.sleep(1.5)
            old = cluster.replicas[i]
            old.alive = False  # the load balancer stops routing to it
            roll.stopped[old.owner] = time.time()
            old.proc.send_signal(sig)
            code = await asyncio.to_thread(old.proc.wait, 15)
            assert code == (0 if sig is signal.SIGTERM else -signal.SIGKILL), (i, code)
            new = _start(cluster.db_url, cluster.chats, cluster.effects, tmp, i, EXTRA)
            cluster.replicas[i] = new
            await _wait_ready(session, new, tmp)
        await asyncio.sleep(1.5)


def _stalls(events: dict[str, list[asyncpg.Record]], stopped: dict[str, float]) -> dict[str, float]:
    """Per approval, its worst wait for a worker: decision to first launch, and for a launch cut
    short by a kill of its replica, the kill to the next launch."""
    out: dict[str, float] = {}
    for aid, evs in events.items():
        decided = next(e["at"] for e in evs if e["kind"] in FINAL)
        starts = [e for e in evs if e["kind"] == "job_started"]
        worst = starts[0]["at"] - decided
        for before, after in itertools.pairwise(starts):
            between = [e["kind"] for e in evs if before["at"] <= e["at"] <= after["at"]]
            if "job_retrying" not in between and before["actor"] in stopped:  # cut by the stop, not retried
                worst = max(worst, after["at"] - max(stopped[before["actor"]], before["at"]))
        out[aid] = worst
    return out


async def _check(pool: asyncpg.Pool, cluster: Cluster, roll: Roll, sig: signal.Signals) -> tuple[float, float]:
    """The invariants; returns the worst stall and the worst lateness of a deadline."""
    ids = {a["id"] for a in roll.approvals}
    rows = {r["id"]: r for r in await pool.fetch("SELECT id, status, deadline, decision FROM approvals")}
    assert set(rows) == ids  # none lost, none extra
    events: dict[str, list[asyncpg.Record]] = defaultdict(list)
    for r in await pool.fetch("SELECT approval_id, kind, at, actor, channel, data FROM events ORDER BY id"):
        events[r["approval_id"]].append(r)
    late, timed_out = 0.0, 0
    for aid, row in rows.items():
        kinds = [e["kind"] for e in events[aid]]
        assert [k for k in kinds if k in FINAL] == [row["status"]], (aid, kinds)
        assert kinds.count("job_succeeded") == 1, (aid, kinds)
        if row["status"] == "timed_out":
            timed_out += 1
            late = max(late, next(e["at"] for e in events[aid] if e["kind"] == "timed_out") - row["deadline"])
        for channel in CHANNELS:
            mine = [e for e in events[aid] if e["channel"] == channel]
            assert [e["kind"] for e in mine].count("card_posted") == 1, (aid, channel, kinds)
            synced = [json.loads(e["data"])["status"] for e in mine if e["kind"] == "card_synced"]
            posted_after = kinds.index("card_posted") > kinds.index(row["status"])  # rendered decided
            assert synced[-1:] == [row["status"]] or (not synced and posted_after), (aid, channel, kinds)
    jobs = await pool.fetch("SELECT approval_id, status FROM resume_jobs")
    assert sorted(j["approval_id"] for j in jobs) == sorted(ids)  # exactly one job per decision
    assert {j["status"] for j in jobs} == {"succeeded"}
    assert await pool.fetchval("SELECT count(*) FROM outbox WHERE status <> 'done'") == 0
    assert await pool.fetchval("SELECT count(*) FROM cards WHERE status <> 'done'") == 0
    fx = cluster.effects
    assert set(fx.applied) == ids and fx.bad_signatures == 0
    if sig is signal.SIGTERM:
        assert max(fx.launches.values()) == 1, Counter(n for n in fx.launches.values() if n > 1)
    posts = cluster.chats.slack.calls_to("chat.postMessage", ok_only=True)
    assert Counter(_json(b["metadata"])["event_payload"]["approval_id"] for b in posts) == Counter(ids)  # once each
    messages = cluster.chats.slack.messages.values()
    live = sum(any(b.get("type") == "actions" for b in _json(m.get("blocks")) or []) for m in messages)
    assert live == 0  # every card synced to its decision
    assert 0 < timed_out < len(ids), timed_out  # deadlines and presses both won some
    return max(_stalls(events, roll.stopped).values()), late


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
async def test_a_rolling_restart_loses_nothing_and_stalls_nobody(
    cluster: Cluster, tmp_path: Path, sig: signal.Signals
) -> None:
    started = time.monotonic()
    roll = Roll()
    pool = await asyncpg.create_pool(cluster.db_url, min_size=1, max_size=3)
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=15)) as session:
            load = asyncio.create_task(_load(cluster, session, roll))
            try:
                await _restart_each(cluster, tmp_path, sig, roll)
            finally:
                roll.running = False
                await load
        await _settled(pool, within=20)
        stall, late = await _check(pool, cluster, roll, sig)
    finally:
        await pool.close()
    elapsed = time.monotonic() - started
    print(
        f"\nrolling restart with {sig.name}: {len(roll.approvals)} approvals in {elapsed:.1f}s;"
        f" worst decision-to-worker-start stall {stall:.2f}s; worst deadline applied {late:.2f}s late"
    )
    assert stall <= MAX_STALL[sig.name], f"a decided approval waited {stall:.2f}s for its worker"
    assert elapsed < 60


async def test_a_stalled_replica_keeps_its_running_job(cluster: Cluster, effects: FakeEffects) -> None:
    """SIGSTOP the replica that runs a job for 3 s (its heartbeat goes stale after 1.5 s, its
    lock stays): nobody takes the job over, and it is launched once."""
    effects.delay = 4.0
    pool = await asyncpg.create_pool(cluster.db_url, min_size=1, max_size=2)
    try:
        async with aiohttp.ClientSession() as session:
            a = await _suspend(cluster, session, 1)
            status, _ = await _send(
                cluster,
                session,
                lambda base: session.post(f"{base}/v1/resume", json={"token": a["resume_token"], "outcome": "approve"}),
            )
            assert status == 200
            owner = None
            for _ in range(200):
                owner = await pool.fetchval("SELECT claimed_by FROM resume_jobs WHERE approval_id = $1", a["id"])
                if owner and effects.in_flight_ids(younger_than=10):
                    break
                await asyncio.sleep(0.02)
            holder = next(r for r in cluster.replicas if r.owner == owner)
            holder.proc.send_signal(signal.SIGSTOP)
            try:
                await asyncio.sleep(3.0)
                assert effects.launches[a["id"]] == 1
            finally:
                holder.proc.send_signal(signal.SIGCONT)
            for _ in range(300):
                if await pool.fetchval("SELECT status FROM resume_jobs WHERE approval_id = $1", a["id"]) == "succeeded":
                    break
                await asyncio.sleep(0.05)
            job = await pool.fetchrow("SELECT status, attempts FROM resume_jobs WHERE approval_id = $1", a["id"])
            assert (job["status"], job["attempts"]) == ("succeeded", 1)
            assert effects.launches[a["id"]] == 1
    finally:
        await pool.close()
