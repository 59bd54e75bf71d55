"""`make chaos`: a bounded soak. Load runs through a real gateway subprocess while it is SIGKILLed
at random moments and restarted; afterwards the invariants are checked on the database.

Clients behave like real agents: a suspend whose reply was lost is retried with the SAME
idempotency key until it is acknowledged; some approvals get two racing decisions; a decision
whose reply was lost is retried. The ledger keeps only what the gateway acknowledged.

Every approval goes to two channels, `web` and `telegram:CHAT` (the fake Bot API, served by this
process so it survives the kills, with the real python-telegram-bot client in the gateway), and
has one of three workers, picked at random. The `entrypoint` worker `pay`
(`bench.cycle_worker:step`): on approve it charges the fake payment API
(examples/invoice_agent/payments.py, also in this process) with the SDK's idempotency key inside a
journaled `DurableRun.step`, otherwise it journals a `work` step. The bare `command` workers
`bare` and `keyed` (bench/effect_worker.py) apply one effect on approve at the effects API
(bench/effects.py, in this process): `bare` ignores HITL_IDEMPOTENCY_KEY, `keyed` sends it as the
`Idempotency-Key` the API de-duplicates on. The summary prints how many approvals had their effect
applied twice for each (a kill between the effect and `job_succeeded` relaunches the job): the
bare worker's are expected (it is at-least-once), the keyed worker's must be 0. Decisions come
from the API (some of them two racing ones) and from Telegram button presses on the posted card
(the signed callback_data, through `/webhooks/telegram`; a press whose reply was lost is
redelivered, as Telegram does).

Checks (a table row each): no acknowledged approval lost, one approval per idempotency key, at
most one decision per approval and the acknowledged one, exactly one resume job per decided
approval, every web and Telegram card posted once and synced (the Telegram card's message in the
fake lost its buttons), each worker succeeded exactly once (one `job_succeeded`, one journaled
step), no payment twice (one charge per approved run, none otherwise, and the journaled
charge is the API's), the keyed worker's effect applied once per approved approval, and
`hitl-gateway audit verify` passes on the database once the gateways stopped.

    python -m bench.chaos [--seconds 90] [--kills 12] [--clients 16] [--seed N] [--port N]
                          [--pg [--replicas 2]]

`--pg` runs the same soak and checks on a fresh PostgreSQL database (HITL_TEST_POSTGRES_URL, see
bench/pg.py); `--replicas N` (PostgreSQL only) runs N gateways on it, each request goes to the
next one (a load balancer: a dead one's requests go to the others), and each SIGKILL hits one
replica at random, restarted before the next kill, so the others take over its claimed jobs,
outbox rows and due deadlines (failover, docs/replicas.md) while it is down.

`make test` runs a short one (15 s, 4 kills, a fixed seed): tests/integration/test_chaos_soak.py.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import os
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import aiohttp
from aiohttp import web

from bench.cycle import CHAT, TOKEN, CardWatch, config, press
from bench.cycle import HOOK_HEADERS as TELEGRAM_HEADERS
from bench.effects import EffectsAPI
from bench.load import suspend_body
from bench.server import AUTH, OPERATOR, ROOT, Gateway
from examples.invoice_agent.payments import PaymentsAPI
from tests.fakes.server import serve_local

FINAL_EVENTS = ("approved", "rejected", "timed_out", "cancelled")
RUN_ID = re.compile(r"chaos-[0-9a-f]{12}")
WORKERS = ("pay", "bare", "keyed")  # each approval's worker, picked at random


@dataclass
class Ledger:
    """What the gateway acknowledged (a 2xx reply reached the client)."""

    suspended: dict[str, str] = field(default_factory=dict)  # idempotency key -> approval id
    decided: dict[str, str] = field(default_factory=dict)  # approval id -> acknowledged outcome
    raced: set[str] = field(default_factory=set)
    pressed: set[str] = field(default_factory=set)  # decided by a Telegram press
    telegram: CardWatch = field(default_factory=lambda: CardWatch(TOKEN))
    payments: PaymentsAPI = field(default_factory=PaymentsAPI)
    pay_url: str = ""
    effects: EffectsAPI = field(default_factory=EffectsAPI)
    effects_url: str = ""
    update_ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    errors: int = 0
    swept: int = 0  # uncertain cards pressed after the soak
    retries: int = 0
    requests: int = 0
    # (killed, ready again), wall times, of the spans with no gateway serving (one gateway: each kill)
    downtimes: list[tuple[float, float]] = field(default_factory=list)
    audit: tuple[int, str] = (-1, "not run")  # `audit verify` after the soak: exit status, its line
    phases: dict[str, float] = field(default_factory=dict)  # seconds: start, load, stop, audit verify
    kills: list[tuple[float, int]] = field(default_factory=list)  # (wall time, replica) of each SIGKILL


@dataclass
class Cluster:
    """The gateway processes on the one database; requests go to each in turn, as through a load
    balancer, and a request that got no reply is sent again to the next one."""

    gws: list[Gateway]
    turn: Iterator[int] = field(default_factory=itertools.count)

    def urls(self) -> Iterator[str]:
        """Where one request goes: a replica, then (for each retry) the next ones, round and round."""
        first = next(self.turn)
        return (self.gws[(first + i) % len(self.gws)].url for i in itertools.count())


async def _call(
    http: aiohttp.ClientSession,
    gws: Cluster,
    path: str,
    body: dict[str, Any],
    ledger: Ledger,
    headers: dict[str, str] = AUTH,
) -> tuple[int, Any]:
    """POST until a gateway answers (it may be dead or restarting). Returns status and body."""
    delay = 0.02
    for root in gws.urls():
        url = root + path
        ledger.requests += 1
        try:
            data_in = json.dumps(body)
            timeout = aiohttp.ClientTimeout(total=10)
            async with http.post(
                url, data=data_in, headers={**headers, "Content-Type": "application/json"}, timeout=timeout
            ) as resp:
                data = await resp.json(content_type=None)
                if resp.status >= 500:
                    ledger.errors += 1
                return resp.status, data
        except (aiohttp.ClientError, TimeoutError, json.JSONDecodeError):
            ledger.retries += 1
            await asyncio.sleep(delay)
            delay = min(0.5, delay * 2)
    raise AssertionError("unreachable: urls() never ends")


async def _agent(gw: Cluster, ledger: Ledger, stop: asyncio.Event, rng: random.Random) -> None:
    async with aiohttp.ClientSession() as http:
        while not stop.is_set():
            run = f"chaos-{uuid.uuid4().hex[:12]}"
            key = f"key-{run}"
            worker = rng.choice(WORKERS)
            body = suspend_body(
                run,
                worker=worker,
                idempotency_key=key,
                channels=["web", f"telegram:{CHAT}"],
                state={"pay": ledger.pay_url} if worker == "pay" else {},
            )
            status, data = await _call(http, gw, "/v1/suspend", body, ledger)
            if status not in (200, 201):
                ledger.errors += 1
                continue
            ledger.suspended[key] = data["id"]
            roll = rng.random()
            if roll < 0.5:
                continue  # left waiting
            url = f"/v1/approvals/{data['id']}/decision"
            if roll < 0.65 and await _press(gw, http, data["id"], ledger):
                continue
            if roll < 0.8:
                outcome = rng.choice(["approve", "reject"])
                status, _ = await _call(http, gw, url, {"outcome": outcome, "by": "web:alice"}, ledger, OPERATOR)
                if status == 200:
                    ledger.decided[data["id"]] = outcome
                continue
            ledger.raced.add(data["id"])  # two people press at once
            results = await asyncio.gather(
                _call(http, gw, url, {"outcome": "approve", "by": "web:alice"}, ledger, OPERATOR),
                _call(http, gw, url, {"outcome": "reject", "by": "web:bob"}, ledger, OPERATOR),
            )
            won = [o for (s, _), o in zip(results, ("approve", "reject"), strict=True) if s == 200]
            if len(won) > 1:
                ledger.errors += 1  # both acknowledged: a double decision
            elif won:
                ledger.decided[data["id"]] = won[0]


async def _press(gw: Cluster, http: aiohttp.ClientSession, approval_id: str, ledger: Ledger) -> bool:
    """Press Approve on the Telegram card (once it is posted); redeliver until a 200. False if the
    card did not arrive in time (the gateway may have died before posting it)."""
    try:
        message_id, data = await ledger.telegram.cards.get(approval_id, within=3.0)
    except TimeoutError:
        return False
    update = press(next(ledger.update_ids), message_id, data)
    status, _ = await _call(http, gw, "/webhooks/telegram", update, ledger, TELEGRAM_HEADERS)
    if status != 200:
        ledger.errors += 1
        return False
    ledger.decided[approval_id] = "approve"
    ledger.pressed.add(approval_id)
    return True


async def _killer(
    gws: Cluster, kills: int, seconds: float, rng: random.Random, stop: asyncio.Event, ledger: Ledger
) -> int:
    """`kills` SIGKILLs spread over `seconds` (at least), each of one gateway (at random among
    replicas) followed by its restart; the others serve on meanwhile."""
    done = 0
    stop_at = time.monotonic() + seconds
    gap = seconds / max(1, kills)
    while done < kills:
        await asyncio.sleep(rng.uniform(0.2 * gap, 1.0 * gap))
        victim = rng.randrange(len(gws.gws))
        gw = gws.gws[victim]
        killed = time.time()
        gw.kill()
        ledger.kills.append((killed, victim))
        done += 1
        await asyncio.sleep(rng.uniform(0.0, 0.3))
        await asyncio.to_thread(gw.start)
        if len(gws.gws) == 1:
            ledger.downtimes.append((killed, time.time()))
    await asyncio.sleep(max(0.0, stop_at - time.monotonic()))
    stop.set()
    return done


# ---------------------------------------------------------------- the database, either backend
class Db(Protocol):
    """What the checks use of a connection: sqlite3.Connection's `execute`, with `?` and `?N`."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Any: ...


class Rows(list[tuple[Any, ...]]):
    """A query's rows, read like a sqlite3 cursor."""

    def fetchone(self) -> tuple[Any, ...] | None:
        return self[0] if self else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self)


PLACEHOLDER = re.compile(r"\?(\d*)")


def pg_sql(sql: str) -> str:
    """SQLite's `?` (the next parameter) and `?N` as PostgreSQL's `$N` (the checks' SQL has no
    question mark in a literal)."""
    n = itertools.count(1)
    return PLACEHOLDER.sub(lambda m: f"${m[1] or next(n)}", sql)


class PgDb:
    """A synchronous face of one asyncpg connection (its own event loop), so that the checks run
    unchanged on PostgreSQL; call it outside any running loop (`asyncio.to_thread` from inside one)."""

    def __init__(self, url: str) -> None:
        import asyncpg

        self.loop = asyncio.new_event_loop()
        self.conn = self.loop.run_until_complete(asyncpg.connect(url))

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Rows:
        return Rows(tuple(r) for r in self.loop.run_until_complete(self.conn.fetch(pg_sql(sql), *params)))

    def close(self) -> None:
        try:
            self.loop.run_until_complete(self.conn.close())
        finally:
            self.loop.close()


@contextmanager
def connect(store: str) -> Iterator[Db]:
    """The soak's database: a postgresql:// URL, else a SQLite file's path."""
    if store.startswith("postgresql://"):
        pg = PgDb(store)
        try:
            yield pg
        finally:
            pg.close()
    else:
        with sqlite3.connect(store) as db:
            yield db


# ---------------------------------------------------------------- checks
Check = Callable[[Db, Ledger], tuple[int, list[str]]]


def check_no_approval_lost(db: Db, ledger: Ledger) -> tuple[int, list[str]]:
    bad = []
    for key, aid in ledger.suspended.items():
        row = db.execute("SELECT id FROM approvals WHERE idempotency_key = ?", (key,)).fetchone()
        if row is None or row[0] != aid:
            bad.append(f"{key}: acknowledged {aid}, found {row[0] if row else None}")
    return len(ledger.suspended), bad


def check_one_approval_per_key(db: Db, ledger: Ledger) -> tuple[int, list[str]]:
    rows = db.execute("SELECT idempotency_key, COUNT(*) FROM approvals GROUP BY 1 HAVING COUNT(*) > 1").fetchall()
    total = db.execute("SELECT COUNT(*) FROM approvals").fetchone()[0]
    return total, [f"{k}: {n} approvals" for k, n in rows]


def check_one_decision(db: Db, ledger: Ledger) -> tuple[int, list[str]]:
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


def check_one_resume_job(db: Db, ledger: Ledger) -> tuple[int, list[str]]:
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


def _card_rows(db: Db, channel: str) -> list[Any]:
    return db.execute(
        "SELECT a.id, a.status, c.status,"
        " (SELECT COUNT(*) FROM events e WHERE e.approval_id = a.id AND e.kind = 'card_posted' AND e.channel = ?1),"
        " (SELECT COUNT(*) FROM outbox o WHERE o.approval_id = a.id AND o.kind = 'post' AND o.channel = ?1),"
        " (SELECT COUNT(*) FROM outbox o WHERE o.approval_id = a.id AND o.kind = 'sync' AND o.status = 'done'"
        " AND o.channel = ?1), c.ref"
        " FROM approvals a LEFT JOIN cards c ON c.approval_id = a.id AND c.channel = ?1",
        (channel,),
    ).fetchall()


def check_cards(db: Db, ledger: Ledger) -> tuple[int, list[str]]:
    """Web cards: one post per approval and channel, posted; decided ones synced after."""
    rows = _card_rows(db, "web")
    bad = []
    for aid, status, card, posted, posts, synced, _ in rows:
        if card != "done" or posted != 1 or posts != 1:
            bad.append(f"{aid}: card {card}, {posted} card_posted events, {posts} post rows")
        if status != "waiting_approval" and synced < 1:
            bad.append(f"{aid}: decided ({status}) but its card was never synced")
    return len(rows), bad


def chat_cards(db: Db, ledger: Ledger) -> dict[str, list[int]]:
    """Approval id -> the ids of every message in the fake chat that is its card (a card shows
    its run id; cards posted after the decision have no buttons, so buttons cannot tell)."""
    runs = dict(db.execute("SELECT run_id, id FROM approvals").fetchall())
    found: dict[str, list[int]] = {}
    for (_, message_id), msg in ledger.telegram.messages.items():
        for run in RUN_ID.findall(msg.get("text") or ""):
            if run in runs:
                found.setdefault(runs[run], []).append(message_id)
                break
    return found


def check_telegram_never_twice(db: Db, ledger: Ledger) -> tuple[int, list[str]]:
    """Telegram: at most one message per approval in the fake chat, whatever the kills."""
    cards = chat_cards(db, ledger)
    return len(cards), [f"{aid}: {len(mids)} cards" for aid, mids in cards.items() if len(mids) > 1]


def uncertain_cards(db: Db, ledger: Ledger) -> tuple[list[str], list[str]]:
    """Telegram cards recorded `uncertain` (a kill mid-sendMessage): (in the chat, never reached it)."""
    rows = db.execute("SELECT approval_id FROM cards WHERE channel = ? AND status = 'uncertain'", (f"telegram:{CHAT}",))
    ids, cards = [r[0] for r in rows], chat_cards(db, ledger)
    return [a for a in ids if a in cards], [a for a in ids if a not in cards]


def check_telegram_cards(db: Db, ledger: Ledger) -> tuple[int, list[str]]:
    """Telegram: one post row; the card recorded (posted, or adopted by a press) with its message
    in the fake, or `uncertain` (a kill mid-call: never sent again); a decided approval's recorded
    message lost its buttons (synced). After the soak, a person presses every decided uncertain
    card that is in the chat (`_sweep`): the press adopts it and it must be synced too."""
    rows = _card_rows(db, f"telegram:{CHAT}")
    adopted = {r[0] for r in db.execute("SELECT approval_id FROM events WHERE kind = 'card_adopted'")}
    in_chat, _ = uncertain_cards(db, ledger)
    bad = []
    for aid, status, card, posted, posts, synced, ref in rows:
        if card == "uncertain" and posts == 1 and posted == 0:
            if status != "waiting_approval" and aid in in_chat and aid in ledger.telegram.posts:
                bad.append(f"{aid}: decided ({status}), its uncertain card is in the chat and was not adopted")
            continue
        if card != "done" or posted + (aid in adopted) != 1 or posts != 1 or not ref:
            was = "adopted" if aid in adopted else "not adopted"
            bad.append(f"{aid}: card {card}, {posted} card_posted events, {was}, {posts} post rows, ref {ref!r}")
            continue
        message = ledger.telegram.messages.get((CHAT, int(ref.rpartition(":")[2])))
        if message is None:
            bad.append(f"{aid}: its card {ref} is not in the fake Bot API")
        elif status != "waiting_approval" and (synced < 1 or "inline_keyboard" in (message.get("reply_markup") or {})):
            bad.append(f"{aid}: decided ({status}) but its Telegram card still has buttons ({synced} syncs)")
    return len(rows), bad


def check_workers(db: Db, ledger: Ledger) -> tuple[int, list[str]]:
    """Every decided approval: its job succeeded, one job_succeeded event; the `pay` worker's
    also one journaled step (the bare workers journal nothing)."""
    rows = db.execute(
        "SELECT a.id, a.status, j.status, a.worker,"
        " (SELECT COUNT(*) FROM events e WHERE e.approval_id = a.id AND e.kind = 'job_succeeded'),"
        " (SELECT COUNT(*) FROM journal s WHERE s.run_id = a.run_id AND s.status = 'succeeded'),"
        " (SELECT COUNT(*) FROM events e WHERE e.approval_id = a.id AND e.kind = 'job_started')"
        " FROM approvals a LEFT JOIN resume_jobs j ON j.approval_id = a.id WHERE a.status != 'waiting_approval'"
    ).fetchall()
    bad = []
    for aid, status, job, worker, succeeded, steps, started in rows:
        if job != "succeeded" or succeeded != 1 or steps != (worker == "pay"):
            bad.append(f"{aid} ({status}): job {job}, {succeeded} job_succeeded, {steps} journaled, {started} starts")
    return len(rows), bad


def check_payments(db: Db, ledger: Ledger) -> tuple[int, list[str]]:
    """One charge per approved run and none for the others; the journal holds the API's charge."""
    per_run: dict[str, list[str]] = {}
    for charge in ledger.payments.charges.values():
        per_run.setdefault(charge["run_id"], []).append(charge["id"])
    bad = [f"run {run}: {len(ids)} charges" for run, ids in per_run.items() if len(ids) > 1]
    rows = db.execute(
        "SELECT a.run_id, a.status, (SELECT s.output FROM journal s WHERE s.run_id = a.run_id AND s.name = 'charge')"
        " FROM approvals a WHERE a.status != 'waiting_approval' AND a.worker = 'pay'"
    ).fetchall()
    for run, status, journaled in rows:
        charged = per_run.get(run, [])
        if status == "approved" and (len(charged) != 1 or journaled is None or json.loads(journaled) != charged[0]):
            bad.append(f"run {run} approved: charges {charged}, journaled {journaled}")
        if status != "approved" and charged:
            bad.append(f"run {run} {status}: charged {charged}")
    return len(ledger.payments.charges), bad


def check_keyed_effects(db: Db, ledger: Ledger) -> tuple[int, list[str]]:
    """The `keyed` worker: each approved approval's effect applied exactly once (the API
    de-duplicates on HITL_IDEMPOTENCY_KEY, the same on every launch); none for the others."""
    applied = ledger.effects.applied["keyed"]
    rows = db.execute("SELECT id, status FROM approvals WHERE worker = 'keyed' AND status != 'waiting_approval'")
    bad = []
    for aid, status in rows:
        expected = 1 if status == "approved" else 0
        if applied.get(aid, 0) != expected:
            bad.append(f"{aid} ({status}): effect applied {applied.get(aid, 0)} times")
    return len(applied), bad


@dataclass
class Stalls:
    """How long decided approvals waited for their worker to start, the gateway's downtime left
    out (nothing can start while no gateway runs; with replicas one always does). `first`: from
    the decision to the first launch, per approval (a backlog of jobs counts: they run
    `concurrency` at a time). `takeover`: from a kill that cut a launch short to the launch that
    took it over: with one gateway, once it was back (a restarted `serve` takes over every claim
    at once: sqlite/serve_lock.py); with replicas, by whichever one proved the dead one gone
    (docs/replicas.md), nothing left out (a kill of the replica that was not running the launch
    counts as its cut too, when it falls between two launches)."""

    first: list[tuple[float, str]] = field(default_factory=list)
    takeover: list[tuple[float, str]] = field(default_factory=list)

    def line(self) -> str:
        first = sorted(self.first)
        p50 = first[len(first) // 2][0] if first else 0.0
        worst = max(first, default=(0.0, "-"))
        took = max(self.takeover, default=(0.0, "-"))
        return (
            f"decision to worker start p50 {p50 * 1000:.0f} ms, worst {worst[0]:.2f}s ({worst[1]});"
            f" worst takeover of a launch cut by a kill {took[0]:.2f}s ({took[1]}, {len(self.takeover)} cut)"
        )


def stalls(db: Db, ledger: Ledger) -> Stalls:
    def waited(since: float, until: float) -> float:
        down = sum(max(0.0, min(until, back) - max(since, killed)) for killed, back in ledger.downtimes)
        return until - since - down

    events: dict[str, list[tuple[str, float]]] = {}
    for aid, kind, at in db.execute("SELECT approval_id, kind, at FROM events ORDER BY id"):
        events.setdefault(aid, []).append((kind, at))
    out = Stalls()
    for aid, evs in events.items():
        decided = next((at for kind, at in evs if kind in FINAL_EVENTS), None)
        starts = [at for kind, at in evs if kind == "job_started"]
        if decided is None or not starts:
            continue
        out.first.append((waited(decided, starts[0]), aid))
        for before, after in itertools.pairwise(starts):
            cut = next((killed for killed, _ in ledger.kills if before <= killed <= after), None)
            if cut is not None:  # else a retry after a transient failure: its backoff is no stall
                out.takeover.append((waited(cut, after), aid))
    return out


def check_audit_chain(db: Db, ledger: Ledger) -> tuple[int, list[str]]:
    """`hitl-gateway audit verify` on the database after the gateways stopped: every approval's
    hash chain, head and checkpoint holds, whatever the kills cut short."""
    status, line = ledger.audit
    events = int(db.execute("SELECT COUNT(*) FROM events").fetchone()[0])
    return events, [] if status == 0 else [f"audit verify exited {status}: {line}"]


CHECKS: list[tuple[str, Check]] = [
    ("no acknowledged approval lost", check_no_approval_lost),
    ("one approval per idempotency key", check_one_approval_per_key),
    ("exactly one decision, the acknowledged one", check_one_decision),
    ("one resume job per decided approval", check_one_resume_job),
    ("every card posted once and synced (web)", check_cards),
    ("telegram: never two cards for one approval", check_telegram_never_twice),
    ("every card posted once and synced (telegram)", check_telegram_cards),
    ("each worker succeeded exactly once", check_workers),
    ("no payment happened twice", check_payments),
    ("keyed worker: each effect applied once", check_keyed_effects),
    ("the audit chain verifies", check_audit_chain),
]


def _pending(store: str) -> int:
    with connect(store) as db:
        pending = int(db.execute("SELECT COUNT(*) FROM outbox WHERE status = 'pending'").fetchone()[0])
        return pending + int(
            db.execute("SELECT COUNT(*) FROM resume_jobs WHERE status IN ('queued', 'running')").fetchone()[0]
        )


async def _drain(store: str, limit: float) -> float:
    """Wait until the outbox and the resume jobs have nothing pending (leases of killed processes
    must expire first: 60 s)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if await asyncio.to_thread(_pending, store) == 0:
            return time.monotonic() - t0
        await asyncio.sleep(1.0)
    return -1.0


def _swept_cards(store: str, ledger: Ledger) -> list[str]:
    with connect(store) as db:
        in_chat, _ = uncertain_cards(db, ledger)
        final = {r[0] for r in db.execute("SELECT id FROM approvals WHERE status <> 'waiting_approval'")}
    return [a for a in in_chat if a in final and a in ledger.telegram.posts]


async def _sweep(gw: Cluster, store: str, ledger: Ledger) -> int:
    """What a person in the chat does with a card that still shows buttons after the approval was
    decided elsewhere: press it. For an `uncertain` card that press is how the gateway finds it."""
    cards = await asyncio.to_thread(_swept_cards, store, ledger)
    async with aiohttp.ClientSession() as http:
        for aid in cards:
            message_id, data = ledger.telegram.posts[aid][0]
            update = press(next(ledger.update_ids), message_id, data)
            status, _ = await _call(http, gw, "/webhooks/telegram", update, ledger, TELEGRAM_HEADERS)
            ledger.swept += status == 200
    return ledger.swept


async def _serve(app: web.Application) -> tuple[web.AppRunner, str]:
    return await serve_local(app, access_log=None)


def _audit_verify(gw: Gateway) -> tuple[int, str]:
    """`hitl-gateway audit verify` with the soak's config (after the gateways stopped: each one
    seals its heads on SIGTERM): its exit status and the line it printed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), str(ROOT / "sdk"), env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "gateway", "--config", str(gw.workdir / "gateway.toml"), "audit", "verify"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=gw.workdir, timeout=300)
    except subprocess.TimeoutExpired:
        return -1, "timed out after 300 s"
    lines = (done.stdout + done.stderr).strip().splitlines()  # its verdict, else the last log line
    return done.returncode, next((x for x in lines if x.startswith("audit trail")), lines[-1] if lines else "")


def _workers(ledger: Ledger) -> str:
    """The `pay` worker's retry settings, and the two bare command workers."""
    retries = 'max_attempts = 10\nretry_base = "1s"\n'
    script = ROOT / "bench" / "effect_worker.py"
    tables = [
        f'[workers.{mode}]\ncommand = ["{{python}}", "{script}", "{mode}", "{ledger.effects_url}/effects"]\n{retries}'
        for mode in ("bare", "keyed")
    ]
    return retries + "\n" + "\n".join(tables)


async def _soak(
    work: Path, store: str, args: argparse.Namespace, rng: random.Random, ledger: Ledger
) -> tuple[int, float]:
    """The fakes live here for the whole run (they outlive every gateway); returns kills, drain s."""
    tg_runner = await ledger.telegram.serve()
    pay_runner, ledger.pay_url = await _serve(ledger.payments.app())
    effects_runner, ledger.effects_url = await _serve(ledger.effects.app())
    extra = config(ledger.telegram.base_url, 2, "pay", _workers(ledger))
    gws = Cluster([])
    for i in range(args.replicas):
        home = work if args.replicas == 1 else work / f"replica{i}"
        home.mkdir(exist_ok=True)
        gw = Gateway(home, work / "gateway.db", extra_config=extra, **({"port": args.port + i} if args.port else {}))
        gw.store_url = store if store.startswith("postgresql://") else None
        gws.gws.append(gw)
    t0 = time.monotonic()
    try:
        await asyncio.gather(*(asyncio.to_thread(gw.start) for gw in gws.gws))
        ledger.phases["start"], t0 = time.monotonic() - t0, time.monotonic()
        stop = asyncio.Event()
        agents = [_agent(gws, ledger, stop, random.Random(rng.random())) for _ in range(args.clients)]
        results = await asyncio.gather(_killer(gws, args.kills, args.seconds, rng, stop, ledger), *agents)
        ledger.phases["load"] = time.monotonic() - t0
        drained = await _drain(store, args.drain)
        if drained >= 0 and await _sweep(gws, store, ledger):
            drained += await _drain(store, args.drain)
    finally:
        t0 = time.monotonic()
        for gw in gws.gws:
            await asyncio.to_thread(gw.stop)
        ledger.phases["stop"] = time.monotonic() - t0
        await tg_runner.cleanup()
        await pay_runner.cleanup()
        await effects_runner.cleanup()
    t0 = time.monotonic()
    ledger.audit = await asyncio.to_thread(_audit_verify, gws.gws[0])
    ledger.phases["audit verify"] = time.monotonic() - t0
    return int(results[0]), drained


@contextmanager
def _database(pg: bool, work: Path) -> Iterator[str]:
    """The soak's store: a fresh PostgreSQL database (dropped after), else a SQLite file in `work`."""
    if not pg:
        yield str(work / "gateway.db")
        return
    from bench import pg as server

    if (why := server.reachable()) is not None:
        raise SystemExit(f"chaos --pg: {why}")
    with server.database("hitl_chaos") as url:
        yield url


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.chaos")
    p.add_argument("--seconds", type=float, default=60.0, help="load time (kills happen in it)")
    p.add_argument("--kills", type=int, default=12)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--drain", type=float, default=150.0, help="max seconds to wait for the outbox and jobs after")
    p.add_argument("--seed", type=int, default=None)
    # the suite's run (tests/integration/test_chaos_soak.py) passes a port below the kernel's
    # ephemeral range: between a kill and the restart, another test's client socket could take a
    # port the kernel handed out, and the restart would fail to bind it
    p.add_argument("--port", type=int, default=0, help="the gateway's port, replica i's + i (default: a free one)")
    p.add_argument("--pg", action="store_true", help="on a fresh PostgreSQL database (HITL_TEST_POSTGRES_URL)")
    p.add_argument("--replicas", type=int, default=1, help="gateway processes on the one database (with --pg)")
    args = p.parse_args()
    if args.replicas < 1 or (args.replicas > 1 and not args.pg):
        p.error("--replicas N share one database: PostgreSQL only (--pg), N >= 1")
    # the fakes' server logs a traceback for every request cut by a SIGKILLed gateway: expected here
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    ledger = Ledger()
    t_start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hitl-chaos-") as tmp, _database(args.pg, Path(tmp)) as store:
        work = Path(tmp)
        kills, drained = asyncio.run(_soak(work, store, args, rng, ledger))
        with connect(store) as db:
            outcomes = [(name, *fn(db, ledger)) for name, fn in CHECKS]
            attempts = db.execute("SELECT COUNT(*) FROM events WHERE kind = 'job_started'").fetchone()[0]
            jobs = db.execute("SELECT COUNT(*) FROM resume_jobs").fetchone()[0]
            cards = db.execute("SELECT COUNT(*) FROM cards WHERE channel = ?", (f"telegram:{CHAT}",)).fetchone()[0]
            in_chat, never_sent = uncertain_cards(db, ledger)
            stalled = stalls(db, ledger)
    failed = sum(1 for _, _, bad in outcomes if bad)
    backend = "SQLite" if not args.pg else f"PostgreSQL, {args.replicas} replica{'s' if args.replicas > 1 else ''}"
    per = ""
    if args.replicas > 1:
        each = [sum(v == i for _, v in ledger.kills) for i in range(args.replicas)]
        per = " (" + ", ".join(f"{n} of replica {i}" for i, n in enumerate(each)) + ")"
    print(
        f"chaos: seed {seed}, {backend}, {kills} SIGKILLs{per} in {args.seconds:.0f}s, {args.clients} agents, "
        f"{ledger.requests} requests ({ledger.retries} retried after a crash), "
        f"outbox and jobs drained {f'in {drained:.0f}s' if drained >= 0 else 'NOT in time'}, "
        f"total {time.monotonic() - t_start:.0f}s ({', '.join(f'{k} {v:.0f}s' for k, v in ledger.phases.items())})"
    )
    print(
        f"acknowledged: {len(ledger.suspended)} suspends, {len(ledger.decided)} decisions "
        f"({len(ledger.raced)} raced, {len(ledger.pressed)} by a Telegram press), 5xx or double acks: {ledger.errors}"
    )
    print(
        f"workers: {jobs} jobs, {attempts} attempts started; payments: {len(ledger.payments.charges)} charges from "
        f"{ledger.payments.requests} requests (replays de-duplicated by Idempotency-Key: "
        f"{ledger.payments.requests - len(ledger.payments.charges)}); Telegram: "
        f"{ledger.telegram.sent} sendMessage for {cards} cards; {len(in_chat) + ledger.swept} uncertain after a kill "
        f"mid-call ({ledger.swept} adopted by a press after the soak, {len(in_chat)} still waiting), "
        f"{len(never_sent)} never reached the chat (at most once: see docs/telegram.md)"
    )
    print(
        f"effects applied twice after a relaunch: bare worker (ignores HITL_IDEMPOTENCY_KEY) "
        f"{ledger.effects.line('bare')}; keyed worker (sends it to a de-duplicating API) {ledger.effects.line('keyed')}"
    )
    left_out = "their downtime left out" if args.replicas == 1 else "another replica serving throughout"
    print(f"failover ({len(ledger.kills)} restarts, {left_out}): {stalled.line()}")
    print(f"audit verify (exit {ledger.audit[0]}): {ledger.audit[1]}")
    width = max(len(c[0]) for c in CHECKS)
    print(f"{'invariant':<{width}}  {'checked':>8}  result")
    for name, checked, bad in outcomes:
        print(f"{name:<{width}}  {checked:>8}  {'OK' if not bad else f'FAIL ({len(bad)})'}")
        for line in bad[:5]:
            print(f"{'':<{width}}            {line}")
    ok = not failed and kills >= args.kills and ledger.errors == 0 and drained >= 0
    print("chaos: PASS" if ok else "chaos: FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
