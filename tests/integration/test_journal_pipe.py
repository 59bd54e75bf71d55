"""An entrypoint pool process journals over the socket the gateway gave it, not over HTTP: no
gateway HTTP server runs in these tests, so a step that went over HTTP could not be journaled."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hitl_sdk.journal import pipe_fd

from gateway.core.models import JobStatus
from gateway.jobs import pool as pool_module
from gateway.testing import FakeClock
from tests.integration.conftest import MakeRt
from tests.integration.test_worker import decided, job


def _pool(entrypoint: str) -> dict[str, Any]:
    return {"entrypoint": f"tests.fakes.journal_entry:{entrypoint}", "timeout": "20s", "pool_size": 1}


def _lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / "journal.log").read_text().splitlines()]


@pytest.mark.subprocess
async def test_a_pool_process_journals_through_its_socket(make_rt: MakeRt, tmp_path: Path) -> None:
    rt = await make_rt(pool=_pool("journaled"))
    approvals = [await decided(rt, "pool", state={"out": str(tmp_path)}) for _ in range(2)]
    await rt.worker.drain()
    for a in approvals:
        assert (await job(rt, a)).status is JobStatus.SUCCEEDED
        (step,) = await rt.store.get_steps(a.run_id, namespace=a.namespace)
        assert (step.name, step.output["done"]) == ("work", 42)
    lines = _lines(tmp_path)
    assert [x["journal"] for x in lines] == ["PipeJournal", "PipeJournal"]
    assert len({x["pid"] for x in lines}) == 1  # one process, its one socket, two launches


@pytest.mark.subprocess
async def test_a_relaunch_replays_the_step_it_journaled_through_the_socket(
    make_rt: MakeRt, tmp_path: Path, clock: FakeClock
) -> None:
    """The process dies after its step was journaled; the new process's launch replays it."""
    rt = await make_rt(pool=_pool("journaled"))
    a = await decided(rt, "pool", state={"out": str(tmp_path), "crash_once": True})
    await rt.worker.drain()
    assert (await job(rt, a)).status is JobStatus.QUEUED  # the dead process: retried later
    clock.advance(3600)
    await rt.worker.drain()
    assert (await job(rt, a)).status is JobStatus.SUCCEEDED
    first, second = _lines(tmp_path)
    assert first["pid"] != second["pid"]  # a new process, with its own socket
    assert second["result"] == first["result"] == {"done": 42, "pid": first["pid"]}  # replayed, not run again
    assert len(await rt.store.get_steps(a.run_id, namespace=a.namespace)) == 1


@pytest.mark.subprocess
async def test_a_journal_call_too_long_to_read_replaces_the_process(
    make_rt: MakeRt, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the longest line the gateway reads, the two sides are out of step: the process is
    killed (a transient failure, retried in a new one), not left with a journal that cannot work."""
    monkeypatch.setattr(pool_module, "JOURNAL_LINE_MAX", 4096)
    rt = await make_rt(pool=_pool("journaled"))
    a = await decided(rt, "pool", state={"out": str(tmp_path), "pad": 8192})
    await rt.worker.drain()
    failed = await job(rt, a)
    assert failed.status is JobStatus.QUEUED and "pool process died" in (failed.last_error or "")
    assert await rt.store.get_steps(a.run_id, namespace=a.namespace) == []


def test_the_socket_is_the_pool_process_own() -> None:
    """A program a step starts inherits HITL_JOURNAL_FD, but not the socket: its SDK ignores it."""
    mine = {"HITL_JOURNAL_FD": f"7:{os.getpid()}"}
    assert pipe_fd(mine) == 7
    assert pipe_fd({"HITL_JOURNAL_FD": f"7:{os.getpid() + 1}"}) is None
    assert pipe_fd({"HITL_JOURNAL_FD": "7"}) is None
    assert pipe_fd({}) is None
