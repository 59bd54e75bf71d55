"""`make chaos`: a bounded soak. Load runs through a real gateway subprocess while it is SIGKILLed
at random moments and restarted; afterwards the invariants are checked on the database.

Clients behave like real agents: a suspend whose reply was lost is retried with the SAME
idempotency key until it is acknowledged; some approvals get two racing decisions; a decision
whose reply was lost is retried. The ledger keeps only what the gateway acknowledged.

Checks (a table row each): no acknowledged approval lost, one approval per idempotency key, at
most one decision per approval and the acknowledged one, exactly one resume job per decided
approval with a worker, every card posted once and synced. PLUG-IN: `EXTRA_CHECKS` gets
the worker (issue 6), chat-card (issues 3, 4) and payment checks once those branches merge;
until then they print as skipped with the reason.

    python -m bench.chaos [--seconds 90] [--kills 12] [--clients 16] [--seed N]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import random
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bench.load import suspend_body
from bench.server import AUTH, Gateway

FINAL_EVENTS = ("approved", "rejected", "timed_out", "cancelled")


@dataclass
class Ledger:
    """What the gateway acknowledged (a 2xx reply reached the client)."""

    suspended: dict[str, str] = field(default_factory=dict)  # idempotency key -> approval id
    decided: dict[str, str] = field(default_factory=dict)  # approval id -> acknowledged outcome
    raced: set[str] = field(default_factory=set)
    errors: int = 0
    retries: int = 0
    requests: int = 0


async def _call(http: aiohttp.ClientSession, url: str, body: dict[str, Any], ledger: Ledger) -> tuple[int, Any]:
    """POST until the gateway answers (it may be dead or restarting). Returns status and body."""
    delay = 0.02
    while True:
        ledger.requests += 1
        try:
            async with http.post(url, json=body, headers=AUTH, timeout=aiohttp.ClientTimeout(total=10)) as resp:
                data = await resp.json(content_type=None)
                if resp.status >= 500:
                    ledger.errors += 1
                return resp.status, data
        except (aiohttp.ClientError, TimeoutError, json.JSONDecodeError):
            ledger.retries += 1
            await asyncio.sleep(delay)
            delay = min(0.5, delay * 2)


async def _agent(gw: Gateway, ledger: Ledger, stop: asyncio.Event, rng: random.Random) -> None:
    async with aiohttp.ClientSession() as http:
        while not stop.is_set():
            run = f"chaos-{uuid.uuid4().hex[:12]}"
            key = f"key-{run}"
            body = suspend_body(run, worker="agent", idempotency_key=key)
            status, data = await _call(http, f"{gw.url}/v1/suspend", body, ledger)
            if status not in (200, 201):
                ledger.errors += 1
                continue
            ledger.suspended[key] = data["id"]
            roll = rng.random()
            if roll < 0.5:
                continue  # left waiting
            url = f"{gw.url}/v1/approvals/{data['id']}/decision"
            if roll < 0.8:
                outcome = rng.choice(["approve", "reject"])
                status, _ = await _call(http, url, {"outcome": outcome, "by": "web:alice"}, ledger)
                if status == 200:
                    ledger.decided[data["id"]] = outcome
                continue
            ledger.raced.add(data["id"])  # two people press at once
            results = await asyncio.gather(
                _call(http, url, {"outcome": "approve", "by": "web:alice"}, ledger),
                _call(http, url, {"outcome": "reject", "by": "web:bob"}, ledger),
            )
            won = [o for (s, _), o in zip(results, ("approve", "reject"), strict=True) if s == 200]
            if len(won) > 1:
                ledger.errors += 1  # both acknowledged: a double decision
            elif won:
                ledger.decided[data["id"]] = won[0]


async def _killer(gw: Gateway, kills: int, seconds: float, rng: random.Random, stop: asyncio.Event) -> int:
    """`kills` SIGKILLs spread over `seconds` (at least), each followed by a restart."""
    done = 0
    stop_at = time.monotonic() + seconds
    gap = seconds / max(1, kills)
    while done < kills:
        await asyncio.sleep(rng.uniform(0.2 * gap, 1.0 * gap))
        gw.kill()
        done += 1
        await asyncio.sleep(rng.uniform(0.0, 0.3))
        await asyncio.to_thread(gw.start)
    await asyncio.sleep(max(0.0, stop_at - time.monotonic()))
    stop.set()
    return done


# ---------------------------------------------------------------- checks
Check = Callable[[sqlite3.Connection, Ledger], tuple[int, list[str]]]


def check_no_approval_lost(db: sqlite3.Connection, ledger: Ledger) -> tuple[int, list[str]]:
    bad = []
    for key, aid in ledger.suspended.items():
        row = db.execute("SELECT id FROM approvals WHERE idempotency_key = ?", (key,)).fetchone()
        if row is None or row[0] != aid:
            bad.append(f"{key}: acknowledged {aid}, found {row[0] if row else None}")
    return len(ledger.suspended), bad


def check_one_approval_per_key(db: sqlite3.Connection, ledger: Ledger) -> tuple[int, list[str]]:
    rows = db.execute("SELECT idempotency_key, COUNT(*) FROM approvals GROUP BY 1 HAVING COUNT(*) > 1").fetchall()
    total = db.execute("SELECT COUNT(*) FROM approvals").fetchone()[0]
    return total, [f"{k}: {n} approvals" for k, n in rows]


def check_one_decision(db: sqlite3.Connection, ledger: Ledger) -> tuple[int, list[str]]:
    bad = []
    marks = ",".join("?" * len(FINAL_EVENTS))
    rows = db.execute(
        f"SELECT a.id, a.status, a.decision, (SELECT COUNT(*) FROM events e WHERE e.approval_id = a.id"
        f" AND e.kind IN ({marks})) FROM approvals a",
        FINAL_EVENTS,
    ).fetchall()
    for aid, status, decision, finals in rows:
        expected = 0 if status == "waiting_approval" else 1
        if finals != expected or (decision is None) != (expected == 0):
            bad.append(f"{aid}: status {status}, {finals} final events, decision {'set' if decision else 'none'}")
        acked = ledger.decided.get(aid)
        if acked is not None:
            outcome = json.loads(decision)["outcome"] if decision else None
            if outcome != acked:
                bad.append(f"{aid}: acknowledged {acked}, stored {outcome}")
    return len(rows), bad


def check_one_resume_job(db: sqlite3.Connection, ledger: Ledger) -> tuple[int, list[str]]:
    rows = db.execute(
        "SELECT a.id, a.status, (SELECT COUNT(*) FROM resume_jobs j WHERE j.approval_id = a.id),"
        " (SELECT COUNT(*) FROM events e WHERE e.approval_id = a.id AND e.kind = 'job_queued')"
        " FROM approvals a WHERE a.worker IS NOT NULL"
    ).fetchall()
    bad = []
    for aid, status, jobs, queued in rows:
        expected = 0 if status == "waiting_approval" else 1
        if jobs != expected or queued != expected:
            bad.append(f"{aid}: status {status}, {jobs} jobs, {queued} job_queued events")
    return len(rows), bad


def check_cards(db: sqlite3.Connection, ledger: Ledger) -> tuple[int, list[str]]:
    """Web cards: one post per approval and channel, posted; decided ones synced after."""
    rows = db.execute(
        "SELECT a.id, a.status, c.status,"
        " (SELECT COUNT(*) FROM events e WHERE e.approval_id = a.id AND e.kind = 'card_posted'),"
        " (SELECT COUNT(*) FROM outbox o WHERE o.approval_id = a.id AND o.kind = 'post'),"
        " (SELECT COUNT(*) FROM outbox o WHERE o.approval_id = a.id AND o.kind = 'sync' AND o.status = 'done')"
        " FROM approvals a LEFT JOIN cards c ON c.approval_id = a.id"
    ).fetchall()
    bad = []
    for aid, status, card, posted, posts, synced in rows:
        if card != "done" or posted != 1 or posts != 1:
            bad.append(f"{aid}: card {card}, {posted} card_posted events, {posts} post rows")
        if status != "waiting_approval" and synced < 1:
            bad.append(f"{aid}: decided ({status}) but its card was never synced")
    return len(rows), bad


CHECKS: list[tuple[str, Check]] = [
    ("no acknowledged approval lost", check_no_approval_lost),
    ("one approval per idempotency key", check_one_approval_per_key),
    ("exactly one decision, the acknowledged one", check_one_decision),
    ("one resume job per decided approval", check_one_resume_job),
    ("every card posted once and synced (web)", check_cards),
]
# PLUG-IN after merge: ("each worker succeeded exactly once", check_workers) needs gateway.worker (issue 6);
# ("telegram/slack cards posted once and synced", ...) needs the fake chat servers (issues 3, 4);
# ("no payment twice", ...) needs an entrypoint worker that pays a fake PSP with the SDK's idempotency key.
EXTRA_CHECKS: list[tuple[str, str, tuple[str, ...]]] = [
    ("each worker succeeded exactly once", "needs the worker (issue 6)", ("gateway.worker",)),
    (
        "telegram/slack cards posted once and synced",
        "the soak does not drive the chat fakes yet",
        ("adapters.telegram", "adapters.slack", "tests.fakes.telegram_api", "tests.fakes.slack_api"),
    ),
    ("no payment happened twice", "needs the worker + SDK idempotency keys (issue 6)", ("gateway.sdk",)),
]


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


async def _drain(db_path: Path, limit: float) -> float:
    """Wait until the outbox has nothing pending (leases of killed processes must expire first)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        with sqlite3.connect(db_path) as db:
            pending = db.execute("SELECT COUNT(*) FROM outbox WHERE status = 'pending'").fetchone()[0]
        if pending == 0:
            return time.monotonic() - t0
        await asyncio.sleep(1.0)
    return -1.0


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.chaos")
    p.add_argument("--seconds", type=float, default=60.0, help="load time (kills happen in it)")
    p.add_argument("--kills", type=int, default=12)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--drain", type=float, default=120.0, help="max seconds to wait for the outbox after")
    p.add_argument("--seed", type=int, default=None)
    args = p.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    ledger = Ledger()
    t_start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hitl-chaos-") as tmp:
        work = Path(tmp)
        gw = Gateway(work, work / "gateway.db")
        gw.start()
        try:

            async def soak() -> int:
                stop = asyncio.Event()
                agents = [_agent(gw, ledger, stop, random.Random(rng.random())) for _ in range(args.clients)]
                results = await asyncio.gather(_killer(gw, args.kills, args.seconds, rng, stop), *agents)
                return int(results[0])

            kills = asyncio.run(soak())
            drained = asyncio.run(_drain(work / "gateway.db", args.drain))
        finally:
            gw.stop()
        with sqlite3.connect(work / "gateway.db") as db:
            outcomes = [(name, *fn(db, ledger)) for name, fn in CHECKS]
    failed = sum(1 for _, _, bad in outcomes if bad)
    print(
        f"chaos: seed {seed}, {kills} SIGKILLs in {args.seconds:.0f}s, {args.clients} agents, "
        f"{ledger.requests} requests ({ledger.retries} retried after a crash), "
        f"outbox drained {f'in {drained:.0f}s' if drained >= 0 else 'NOT in time'}, "
        f"total {time.monotonic() - t_start:.0f}s"
    )
    print(
        f"acknowledged: {len(ledger.suspended)} suspends, {len(ledger.decided)} decisions "
        f"({len(ledger.raced)} raced), 5xx or double acks: {ledger.errors}"
    )
    width = max(len(n) for n in [c[0] for c in CHECKS] + [c[0] for c in EXTRA_CHECKS])
    print(f"{'invariant':<{width}}  {'checked':>8}  result")
    for name, checked, bad in outcomes:
        print(f"{name:<{width}}  {checked:>8}  {'OK' if not bad else f'FAIL ({len(bad)})'}")
        for line in bad[:5]:
            print(f"{'':<{width}}            {line}")
    for name, why, modules in EXTRA_CHECKS:
        ready = all(_has(m) for m in modules)
        print(f"{name:<{width}}  {'-':>8}  skipped: {why}" + (" (pieces merged: write the check)" if ready else ""))
    ok = not failed and kills >= args.kills and ledger.errors == 0 and drained >= 0
    print("chaos: PASS" if ok else "chaos: FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
