"""`HITL_IDEMPOTENCY_KEY`: every launch of a resume job gets the same key (env, document, and a
`url` worker's `Idempotency-Key` header), another approval or an approver's edit another one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from gateway.core.models import JobStatus, Outcome
from gateway.runtime import Runtime
from gateway.sdk import DurableRun
from gateway.service import SuspendRequest
from gateway.service.commands import Authority
from gateway.testing import FakeClock
from tests.integration.conftest import MakeRt
from tests.integration.test_worker import cmd, decided, job, runs
from tests.integration.test_worker_kinds import entry, log_lines

KEY = re.compile(r"hitl_[0-9a-f]{64}")
SCHEMA = {"type": "object", "properties": {"amount": {"type": "integer", "maximum": 10_000}}}


def keys(out: Path, approval_id: str) -> list[str]:
    """The key of each launch, checked to be the same in the environment and the document."""
    found = []
    for seen in [json.loads(p.read_text()) for p in sorted(out.glob(f"{approval_id}.*.json"))]:
        assert seen["env"]["HITL_IDEMPOTENCY_KEY"] == seen["doc"]["idempotency_key"]
        found.append(seen["env"]["HITL_IDEMPOTENCY_KEY"])
    return found


@pytest.mark.subprocess
async def test_every_launch_of_a_job_gets_the_same_key(make_rt: MakeRt, tmp_path: Path, clock: FakeClock) -> None:
    rt = await make_rt(agent=cmd("flaky", tmp_path))  # transient on the first attempt, then fine
    approval = await decided(rt, "agent")
    other = await decided(rt, "agent")
    await rt.worker.drain()
    clock.advance(seconds=30)  # past the retry's backoff
    await rt.worker.drain()
    assert (await job(rt, approval)).status is JobStatus.SUCCEEDED
    first, second = keys(tmp_path, approval.id)
    assert KEY.fullmatch(first) and first == second  # the relaunch: the same key
    assert keys(tmp_path, other.id)[0] != first  # another approval: another key
    token = runs(tmp_path, approval)[0]["env"]["HITL_RESUME_TOKEN"]
    assert token not in first and first not in token


@pytest.mark.subprocess
async def test_a_restarted_gateway_launches_with_the_same_key(
    make_rt: MakeRt, settings_factory: Any, tmp_path: Path, clock: FakeClock
) -> None:
    """A job retried by another process on the same store (a restart after a crash) gets the same
    key: it is derived, not drawn at random."""
    rt = await make_rt(agent=cmd("tempfail", tmp_path))
    approval = await decided(rt, "agent")
    await rt.worker.drain()
    await rt.stop()
    again = Runtime(settings_factory(workers={"agent": cmd("ok", tmp_path)}), clock=clock, owner="restarted")
    await again.start(background=False)
    try:
        clock.advance(seconds=30)
        await again.worker.drain()
        assert (await job(again, approval)).status is JobStatus.SUCCEEDED
    finally:
        await again.stop()
    first, second = keys(tmp_path, approval.id)
    assert first == second


@pytest.mark.subprocess
async def test_an_edit_of_the_approved_args_changes_the_key(make_rt: MakeRt, tmp_path: Path) -> None:
    rt = await make_rt(agent=cmd("ok", tmp_path))
    as_asked = await decided(rt, "agent")
    req = SuspendRequest(
        run_id=as_asked.run_id + "-edited",
        step="charge",
        title="Charge",
        args={"amount": 42, "email": "carol@example.com"},
        worker="agent",
        args_schema=SCHEMA,
        editable=["amount"],
    )
    approval, _ = await rt.service.suspend(req)
    raw = {"amount": 39, "email": "carol@example.com"}
    await rt.service.decide(approval.id, Outcome.APPROVE, "web:bob", authority=Authority.OPERATOR, args=raw)
    await rt.worker.drain()
    (edited,) = keys(tmp_path, approval.id)
    (unedited,) = keys(tmp_path, as_asked.id)
    assert (await rt.store.get_approval(approval.id)).run_hash != approval.args_hash  # type: ignore[union-attr]
    assert KEY.fullmatch(edited) and edited != unedited


async def test_a_url_worker_gets_the_key_as_a_header_and_in_the_body(
    make_rt: MakeRt, aiohttp_server: Any, tmp_path: Path
) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    async def receive(request: web.Request) -> web.Response:
        seen.append((request.headers["Idempotency-Key"], await request.json()))
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_post("/resume", receive)
    server = await aiohttp_server(app)
    url = f"http://127.0.0.1:{server.port}/resume"
    rt = await make_rt(agent={"url": url, "allowed_hosts": ["127.0.0.1"]})
    approval = await decided(rt, "agent")
    await rt.worker.drain()
    ((header, body),) = seen
    assert KEY.fullmatch(header) and body["idempotency_key"] == header
    assert body["approval"]["id"] == approval.id


@pytest.mark.subprocess
async def test_an_entrypoint_gets_the_key_in_its_environment_and_its_document(make_rt: MakeRt, tmp_path: Path) -> None:
    rt = await make_rt(pool=entry())
    approval = await decided(rt, "pool", state={"out": str(tmp_path)})
    await rt.worker.drain()
    (seen,) = log_lines(tmp_path)
    assert seen["approval"] == approval.id and KEY.fullmatch(seen["key"]) and seen["doc_key"] == seen["key"]


async def test_the_sdk_exposes_the_key_of_the_launch() -> None:
    """`DurableRun.from_env` in a worker: `run.effect_key` is $HITL_IDEMPOTENCY_KEY (else the
    document's); a run the agent opened itself has none."""
    key = "hitl_" + "ab" * 32
    env = {"HITL_GATEWAY_URL": "http://127.0.0.1:9", "HITL_RESUME_TOKEN": "t", "HITL_IDEMPOTENCY_KEY": key}
    async with await DurableRun.from_env(env=env, document={"run_id": "r"}) as run:
        assert run.effect_key == key
    env.pop("HITL_IDEMPOTENCY_KEY")
    async with await DurableRun.from_env(env=env, document={"run_id": "r", "idempotency_key": key}) as run:
        assert run.effect_key == key
    async with await DurableRun.open("r", gateway_url="http://127.0.0.1:9") as run:
        assert run.effect_key is None
