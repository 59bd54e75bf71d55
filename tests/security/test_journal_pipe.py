"""A pool process's journal socket opens what its launch's resume token opens, and nothing else:
not another run, not a run when it runs no launch, and a malformed call changes nothing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.core.models import JobStatus
from gateway.jobs.journal_pipe import answer
from gateway.runtime import Runtime
from gateway.testing import FakeClock
from tests.integration.test_worker import decided, job

STEP = {
    "status": "succeeded",
    "output": {"x": 1},
    "attempts": 1,
    "started_at": "2030-01-01T00:00:00Z",
    "finished_at": "2030-01-01T00:00:01Z",
}


@pytest.fixture
async def foreign_rt(settings_factory: Callable[..., Any], clock: FakeClock) -> AsyncIterator[Runtime]:
    pool = {"entrypoint": "tests.fakes.journal_entry:foreign", "timeout": "20s", "pool_size": 1}
    rt = Runtime(settings_factory(workers={"pool": pool}), clock=clock, owner="test")
    await rt.start(background=False)
    yield rt
    await rt.stop()


@pytest.mark.subprocess
async def test_a_pool_process_cannot_reach_another_run_through_its_socket(foreign_rt: Runtime, tmp_path: Path) -> None:
    rt = foreign_rt
    a = await decided(rt, "pool", state={"out": str(tmp_path)})
    await rt.worker.drain()
    assert (await job(rt, a)).status is JobStatus.SUCCEEDED
    (seen,) = [json.loads(x) for x in (tmp_path / "journal.log").read_text().splitlines()]
    assert seen["other-run"] == [401, "invalid_token"]  # the launch's token opens its own run only
    assert seen["load"] == [401, "invalid_token"]
    assert seen[a.run_id] == "written"  # its own run: as over HTTP with its token
    for namespace in (a.namespace, ""):
        assert await rt.store.get_steps("other-run", namespace=namespace) == []
    # its own run id, in its own namespace only: another agent's run of that id is untouched
    assert [x.name for x in await rt.store.get_steps(a.run_id, namespace=a.namespace)] == ["stolen"]
    for other in {"agent:else", ""} - {a.namespace}:
        assert await rt.store.get_steps(a.run_id, namespace=other) == []


async def _answer(rt: Runtime, token: str | None, line: bytes) -> dict[str, object]:
    reply = json.loads(await answer(rt.journal, rt.settings.server.max_body_bytes, token, line))
    assert isinstance(reply, dict)
    return reply


async def test_the_socket_answers_no_call_between_launches_and_no_malformed_call(runtime: Runtime) -> None:
    a = await decided(runtime, "agent")
    token = runtime.service.resumes.worker_token(a)
    record = {"op": "record", "run_id": a.run_id, "name": "s", "body": STEP}
    idle = await _answer(runtime, None, json.dumps(record).encode())  # the process runs no launch now
    assert idle["error"] == {"status": 409, "code": "conflict", "message": idle["error"]["message"]}  # type: ignore[index]
    bad_lines = [
        b"not json",
        b"[1, 2]",
        json.dumps({"op": "record", "name": "s", "body": STEP}).encode(),  # no run
        json.dumps({"op": "delete", "run_id": a.run_id}).encode(),
        json.dumps({"op": "record", "run_id": a.run_id, "name": "s", "body": {"status": "maybe"}}).encode(),
        json.dumps({"op": "record", "run_id": a.run_id, "name": 5, "body": STEP}).encode(),
    ]
    for line in bad_lines:
        reply = await _answer(runtime, token, line)
        assert reply["error"]["status"] == 400, line  # type: ignore[index]
    forged = await _answer(runtime, token[:-2] + "xx", json.dumps(record).encode())
    assert forged["error"]["status"] == 401, forged  # type: ignore[index]
    assert await runtime.store.get_steps(a.run_id, namespace=a.namespace) == []  # nothing written by any
    limit = runtime.settings.server.max_body_bytes
    huge = record | {"body": STEP | {"output": {"pad": "x" * limit}}}
    too_big = await _answer(runtime, token, json.dumps(huge).encode())  # as the route's 413
    assert too_big["error"]["status"] == 413  # type: ignore[index]
    assert await runtime.store.get_steps(a.run_id, namespace=a.namespace) == []
    ok = await _answer(runtime, token, json.dumps(record).encode())
    assert ok["ok"]["name"] == "s"  # type: ignore[index]
