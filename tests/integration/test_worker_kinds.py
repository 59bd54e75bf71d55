"""The entrypoint pool and url worker kinds, against real processes and a real HTTP server."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from gateway.core.errors import ConfigError
from gateway.core.models import JobStatus
from gateway.jobs.launch import verify
from gateway.testing import TEST_SECRET
from tests.integration.conftest import MakeRt
from tests.integration.test_worker import decided, job, kinds
from tests.procs import free_port


def entry(**over: Any) -> dict[str, Any]:
    return {"entrypoint": "tests.fakes.entry:handle", "timeout": "20s", "max_attempts": 3, "pool_size": 1, **over}


def log_lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / "entry.log").read_text().splitlines()]


@pytest.mark.subprocess
async def test_entrypoint_pool_imports_once_and_serves_many(make_rt: MakeRt, tmp_path: Path) -> None:
    rt = await make_rt(pool=entry())
    approvals = [await decided(rt, "pool", state={"out": str(tmp_path)}) for _ in range(3)]
    await rt.worker.drain()
    for a in approvals:
        done = await job(rt, a)
        assert done.status is JobStatus.SUCCEEDED and "handled approved" in (done.output_tail or "")
    lines = log_lines(tmp_path)
    assert {x["approval"] for x in lines} == {a.id for a in approvals}
    assert len({(x["pid"], x["imported_at"]) for x in lines}) == 1  # one process, one import


@pytest.mark.parametrize(
    ("mode", "status", "error"),
    [
        ("crash", JobStatus.QUEUED, "pool process died (killed by SIGKILL)"),
        ("busy", JobStatus.QUEUED, "Busy: try later"),
        ("boom", JobStatus.FAILED, "ValueError: bad input from [redacted:email]"),
    ],
)
@pytest.mark.subprocess
async def test_entrypoint_outcomes(make_rt: MakeRt, tmp_path: Path, mode: str, status: JobStatus, error: str) -> None:
    rt = await make_rt(pool=entry())
    bad = await decided(rt, "pool", state={"out": str(tmp_path), "mode": mode})
    good = await decided(rt, "pool", state={"out": str(tmp_path)})
    await rt.worker.drain()
    failed = await job(rt, bad)
    assert (failed.status, failed.last_error) == (status, error)
    assert (await job(rt, good)).status is JobStatus.SUCCEEDED  # the pool replaced a dead process


@pytest.mark.subprocess
async def test_entrypoint_timeout_kills_the_pool_process(make_rt: MakeRt, tmp_path: Path) -> None:
    # a generous timeout for the step that must succeed: the pool process's start and import count
    # towards it, and took over 1 s on a loaded 2-core host (a flaky QUEUED)
    rt = await make_rt(pool=entry(timeout="30s", entrypoint="tests.fakes.entry:handle_async"))
    ok = await decided(rt, "pool", state={"out": str(tmp_path)})
    await rt.worker.drain()
    assert (await job(rt, ok)).status is JobStatus.SUCCEEDED
    rt2 = await make_rt(pool=entry(timeout="1s"))
    hung = await decided(rt2, "pool", state={"out": str(tmp_path), "mode": "hang"})
    started = time.monotonic()
    await rt2.worker.drain()
    assert time.monotonic() - started < 10
    assert "timed out" in ((await job(rt2, hung)).last_error or "")


class Receiver:
    def __init__(self) -> None:
        self.statuses: list[int] = []
        self.seen: list[dict[str, Any]] = []

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        ok = verify(request.headers["X-HITL-Signature"], body, TEST_SECRET, time.time())
        self.seen.append({"ok": ok, "doc": json.loads(body), "token": request.headers.get("X-HITL-Resume-Token")})
        status = self.statuses.pop(0) if self.statuses else 200
        if status == 302:
            raise web.HTTPFound("http://169.254.169.254/")
        return web.json_response({"received": True}, status=status if ok else 401)


async def test_url_worker_signed_post_and_classification(
    make_rt: MakeRt, aiohttp_server: Callable[..., Any], clock: Any
) -> None:
    receiver = Receiver()
    app = web.Application()
    app.router.add_post("/hook", receiver.handle)
    server = await aiohttp_server(app)
    url = f"http://127.0.0.1:{server.port}/hook"
    rt = await make_rt(hook={"url": url, "allowed_hosts": ["127.0.0.1"], "max_attempts": 3})
    approval = await decided(rt, "hook")
    receiver.statuses = [503, 429, 200]
    for _ in range(3):
        await rt.worker.drain()
        clock.advance(3600)
    assert (await job(rt, approval)).status is JobStatus.SUCCEEDED
    assert [s["ok"] for s in receiver.seen] == [True, True, True]
    assert receiver.seen[0]["doc"]["status"] == "approved"
    assert await kinds(rt, approval) == [
        "job_queued",
        *["job_started", "job_retrying"] * 2,
        "job_started",
        "job_succeeded",
    ]
    for status, expected in ((404, JobStatus.FAILED), (302, JobStatus.FAILED)):
        receiver.statuses = [status]
        a = await decided(rt, "hook")
        await rt.worker.drain()
        assert (await job(rt, a)).status is expected
    assert len(receiver.seen) == 5  # the redirect was not followed


async def test_url_worker_connection_error_is_transient(make_rt: MakeRt) -> None:
    port = free_port()  # nobody listens on it
    rt = await make_rt(hook={"url": f"http://127.0.0.1:{port}/", "allowed_hosts": ["127.0.0.1"]})
    approval = await decided(rt, "hook")
    await rt.worker.drain()
    queued = await job(rt, approval)
    assert queued.status is JobStatus.QUEUED and (queued.last_error or "").startswith("connection error")


def test_url_worker_host_must_be_allowed(settings_factory: Callable[..., Any]) -> None:
    with pytest.raises(ConfigError) as err:
        settings_factory(workers={"hook": {"url": "http://10.0.0.5/x", "allowed_hosts": ["example.com"]}})
    assert err.value.key == "workers.hook.allowed_hosts"
    with pytest.raises(ConfigError, match=r"workers\.hook\.url"):
        settings_factory(workers={"hook": {"url": "file:///etc/passwd", "allowed_hosts": ["x"]}})


def test_worker_secret_is_masked_in_check_config(settings_factory: Callable[..., Any]) -> None:
    from gateway.config import effective_config

    settings = settings_factory(
        workers={"hook": {"url": "http://h/x", "allowed_hosts": ["h"], "secret": "s3cret-value-123"}}
    )
    shown = effective_config(settings)["workers"]["hook"]
    assert shown["secret"] == "***(16 chars)" and "s3cret" not in json.dumps(effective_config(settings))
