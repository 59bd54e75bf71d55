"""In-process measurements on the core: d (timeout storm stand-in) and g (journal replay stand-in).

STAND-INS, clearly labelled in the table:
- d drives `Service.apply_due` directly over the due approvals, unless the SLA scheduler
  (issue 5) is there (`Runtime.scheduler`): then it times `scheduler.tick(now)` instead.
- g times `Store.get_steps` (the read a replaying SDK does) and `Store.record_step`. The SDK
  (issue 6) replays through these calls; HOOK: when `gateway.sdk` exists, time a real replay.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.bulk import due_template, insert_pending, migrate
from gateway.core.models import StepRecord, StepStatus
from gateway.runtime import Runtime
from gateway.sdk import DurableRun, StoreJournal
from gateway.store.sqlite import SQLiteStore
from gateway.testing import FakeClock, make_settings

_WAVE = 512


async def _storm(db: Path, count: int) -> dict[str, Any]:
    now = datetime.now(UTC).replace(microsecond=0)
    settings = make_settings(f"sqlite:///{db}", {"workers": {"agent": {"command": ["true"]}}})
    rt = Runtime(settings, clock=FakeClock(now), owner="bench")
    await rt.start(background=False)
    try:
        t0, cpu0 = time.perf_counter(), time.process_time()
        scheduler = getattr(rt, "scheduler", None)
        if scheduler is not None:  # issue 5 merged: its tick does the storm
            while (await scheduler.tick(now)).total:
                pass
        else:  # stand-in: the same use case, driven in waves
            while due := await rt.store.due_approvals(now, 4 * _WAVE):
                for i in range(0, len(due), _WAVE):
                    await asyncio.gather(*(rt.service.apply_due(a.id, now) for a in due[i : i + _WAVE]))
        seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        decided = (await rt.store.count_by_status()).get("timed_out", 0)
        jobs = await rt.store.list_jobs(limit=count + 1)
    finally:
        await rt.stop()
    # storm_cpu_s: all threads, the storm alone (the writer's share shows here, not in the wall clock)
    return {
        "approvals": count,
        "decided": decided,
        "jobs": len(jobs),
        "seconds": round(seconds, 3),
        "storm_cpu_s": round(cpu, 2),
    }


def storm(workdir: Path, count: int) -> dict[str, Any]:
    """Seconds to time out `count` approvals due at the same instant and queue their resume jobs."""
    mode = "scheduler.tick" if importlib.util.find_spec("gateway.sla.scheduler") else "stand-in: Service.apply_due loop"
    db = workdir / f"storm-{count}.db"
    migrate(db)
    insert_pending(db, count, due_template("agent", datetime.now(UTC).replace(microsecond=0)), prefix="due")
    result = asyncio.run(_storm(db, count))
    result["mode"] = mode
    return result


async def _journal(db: Path, runs: int, steps: int) -> dict[str, Any]:
    store = SQLiteStore(str(db))
    await store.open()
    try:
        now = datetime.now(UTC)

        def step(r: int, s: int) -> StepRecord:
            return StepRecord(
                run_id=f"run-{r}",
                name=f"step-{s:03d}",
                status=StepStatus.SUCCEEDED,
                output={"ok": True, "n": s, "id": f"ch_{r}_{s}"},
                attempts=1,
                started_at=now + timedelta(microseconds=s),
                finished_at=now + timedelta(microseconds=s + 1),
            )

        async def agent(r: int) -> None:  # an agent journals its steps in order; runs go in parallel
            for s in range(steps):
                await store.record_step(step(r, s), namespace="")

        t0 = time.perf_counter()
        await asyncio.gather(*(agent(r) for r in range(runs)))
        record_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        replayed = 0
        for r in range(runs):  # the SDK's replay: a DurableRun re-executes every step, none runs again
            run = DurableRun(f"run-{r}", StoreJournal(store), None)
            for s in range(steps):
                output = await run.step(f"step-{s:03d}", _must_not_run)
                replayed += output["n"] == s
        replay_s = time.perf_counter() - t0
    finally:
        await store.close()
    return {
        "steps": replayed,
        "replay_steps_per_s": round(replayed / replay_s, 1),
        "record_steps_per_s": round(runs * steps / record_s, 1),
    }


def _must_not_run() -> None:
    raise AssertionError("a journaled step ran again on replay")


def journal(workdir: Path, runs: int = 200, steps: int = 50) -> dict[str, Any]:
    mode = "SDK DurableRun.step replay on SQLite"
    db = workdir / "journal.db"
    migrate(db)
    result = asyncio.run(_journal(db, runs, steps))
    result["mode"] = mode
    return result
