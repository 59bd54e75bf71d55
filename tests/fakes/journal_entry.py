"""Entrypoint functions that journal through the pool's socket (tests/integration/test_journal_pipe.py,
tests/security/test_journal_pipe.py). Each writes what it saw to `state.out` as one JSON line."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hitl_sdk import DurableRun, GatewayHTTPError, StepRecord, StepStatus
from hitl_sdk.journal import PipeJournal, pipe_fd


def _out(doc: dict[str, Any], line: dict[str, Any]) -> None:
    with (Path(doc["state"]["out"]) / "journal.log").open("a") as fh:
        fh.write(json.dumps(line) + "\n")


async def journaled(doc: dict[str, Any]) -> None:
    """One step through `DurableRun.from_env`, as a worker writes it; a second run of it replays."""
    async with await DurableRun.from_env(document=doc) as run:
        pad = {"pad": "x" * doc["state"]["pad"]} if doc["state"].get("pad") else {}  # an output this much bigger
        result = await run.step("work", lambda: {"done": doc["args"]["amount"], "pid": os.getpid()} | pad)
        _out(doc, {"journal": type(run.journal).__name__, "result": result, "pid": os.getpid()})
    crashed = Path(doc["state"]["out"]) / "crashed"
    if doc["state"].get("crash_once") and not crashed.exists():  # after the journal: the relaunch replays
        crashed.touch()
        os._exit(1)


async def foreign(doc: dict[str, Any]) -> None:
    """Try the socket for what the launch's token does not open: another run, and a bad call."""
    fd = pipe_fd(os.environ)
    assert fd is not None
    journal = PipeJournal(fd)
    now = datetime.now(UTC)
    seen: dict[str, Any] = {}
    for target in ("other-run", doc["run_id"]):
        try:
            await journal.record(StepRecord(target, "stolen", StepStatus.SUCCEEDED, {"x": 1}, 1, now, now))
            seen[target] = "written"
        except GatewayHTTPError as exc:
            seen[target] = [exc.status, exc.code]
    try:
        await journal.load("other-run")
        seen["load"] = "read"
    except GatewayHTTPError as exc:
        seen["load"] = [exc.status, exc.code]
    _out(doc, seen)
