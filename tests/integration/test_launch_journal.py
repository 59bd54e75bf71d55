"""A launch reads its approval once: the worker reads the approval and its run's journal in one
snapshot, the rehydration document carries that journal (`journal`, as GET /v1/runs/{run_id}/steps
gives its `items`), the SDK starts from it instead of a GET, and the worker's journal PUT is
authorized by its token without reading the approval."""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from aiohttp import web

from gateway.core.models import Outcome, StepRecord, StepStatus
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.sdk import DurableRun, GatewayClient, HttpJournal
from gateway.service import SuspendRequest
from gateway.service.commands import Authority
from gateway.store import Store
from gateway.testing import FakeClock
from tests.procs import free_port

T0 = datetime(2030, 1, 1, tzinfo=UTC)


class Counted:
    """How often the store was asked for an approval, and for a launch (approval + journal)."""

    def __init__(self, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        for name in ("get_approval", "claim_launches"):
            monkeypatch.setattr(store, name, self._wrap(name, getattr(store, name)))

    def _wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        async def counted(*args: Any, **kw: Any) -> Any:
            result = await fn(*args, **kw)
            if result or name != "claim_launches":  # a claim that found nothing read nothing
                self.calls.append(name)
            return result

        return counted


class Worker:
    """A `url` worker that resumes the run with the SDK, as a deployed one would."""

    def __init__(self) -> None:
        self.docs: list[dict[str, Any]] = []
        self.ran: list[str] = []

    async def handle(self, request: web.Request) -> web.Response:
        doc = await request.json()
        self.docs.append(doc)
        env = {"HITL_GATEWAY_URL": request.headers["X-HITL-Gateway-Url"]}
        env["HITL_RESUME_TOKEN"] = request.headers["X-HITL-Resume-Token"]
        async with await DurableRun.from_env(env=env, document=doc) as run:
            assert await run.step("research", self._run, "research") == {"rows": 3}  # journaled before
            assert await run.step("charge", self._run, "charge") == {"done": "charge"}
        return web.json_response({})

    def _run(self, name: str) -> dict[str, str]:
        self.ran.append(name)
        return {"done": name}


@pytest.fixture(params=["plain", "webhook"])
async def gateway(
    request: pytest.FixtureRequest,
    aiohttp_server: Callable[..., Any],
    settings_factory: Callable[..., Any],
    clock: FakeClock,
) -> AsyncIterator[tuple[Runtime, Worker]]:
    """A gateway on a real port whose `hook` worker is `Worker`; with a webhook that hears of
    job.succeeded (the announcement reuses the launch's approval), or none."""
    worker = Worker()
    hook = web.Application()
    hook.router.add_post("/resume", worker.handle)
    receiver = await aiohttp_server(hook)
    port = free_port()
    url = f"http://127.0.0.1:{receiver.port}/resume"
    sections: dict[str, Any] = {}
    if request.param == "webhook":  # queued only: the outbox is not run here
        hook = {
            "name": "siem",
            "url": "http://127.0.0.1:9/events",
            "secret": "whsec_" + base64.b64encode(b"k" * 32).decode(),
            "kinds": ["job.succeeded"],
        }
        sections["events"] = {"webhooks": [hook]}
    settings = settings_factory(
        server={"public_url": f"http://127.0.0.1:{port}"},
        workers={"hook": {"url": url, "allowed_hosts": ["127.0.0.1"], "max_attempts": 1}},
        **sections,
    )
    rt = Runtime(settings, clock=clock, owner="test")
    await aiohttp_server(create_app(settings, runtime=rt, background=False), port=port)
    yield rt, worker


async def test_a_launch_reads_the_approval_once_and_the_worker_starts_from_its_journal(
    gateway: tuple[Runtime, Worker], monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, worker = gateway
    req = SuspendRequest(run_id="launch-1", step="approve", title="Pay", args={"amount": 1}, worker="hook")
    approval, _ = await rt.service.suspend(req)
    ns = approval.namespace
    research = StepRecord("launch-1", "research", StepStatus.SUCCEEDED, {"rows": 3}, 2, T0, T0)
    await rt.store.record_step(research, namespace=ns)
    theirs = StepRecord("launch-1", "theirs", StepStatus.SUCCEEDED, 1, 1, T0, T0)
    await rt.store.record_step(theirs, namespace="agent:x")  # another agent's run of that id
    await rt.service.decide(approval.id, Outcome.APPROVE, "web:bob", authority=Authority.OPERATOR)
    reads = Counted(rt.store, monkeypatch)
    journal_gets: list[str] = []
    steps = rt.journal.steps

    async def counted_steps(run_id: str, *args: Any, **kw: Any) -> list[dict[str, Any]]:
        journal_gets.append(run_id)
        return await steps(run_id, *args, **kw)

    monkeypatch.setattr(rt.journal, "steps", counted_steps)
    started = time.monotonic()
    assert await rt.worker.drain() == 1
    assert time.monotonic() - started < 30
    (doc,) = worker.docs
    # the run's journal in the approval's namespace, as the API gives it (raw outputs)
    assert doc["journal"] == [research.to_api()]
    assert worker.ran == ["charge"]  # research replayed from the document
    assert journal_gets == []  # no GET of the steps
    assert reads.calls == ["claim_launches"]  # the claim read the launch's approval (the PUT read none)
    charged = await rt.store.get_steps("launch-1", namespace=ns)
    assert {s.name for s in charged} == {"research", "charge"}
    job = await rt.store.get_job(approval.id)
    assert job is not None and job.status.value == "succeeded"
    announced = [o for o in await rt.store.list_outbox(approval.id) if o.kind.value == "event"]
    assert [o.data["type"] for o in announced] == (
        ["dev.hitl-gateway.job.succeeded"] if rt.settings.events.webhooks else []
    )


class SpyJournal:
    def __init__(self, steps: dict[str, StepRecord]) -> None:
        self.steps, self.loads = steps, 0

    async def load(self, run_id: str) -> dict[str, StepRecord]:
        self.loads += 1
        return dict(self.steps)

    async def record(self, step: StepRecord) -> StepRecord:
        self.steps[step.name] = step
        return step

    async def close(self) -> None:
        return None


def _doc(run_id: str, journal: list[dict[str, Any]]) -> dict[str, Any]:
    return {"run_id": run_id, "journal": journal, "status": "approved", "step": "approve", "decision": None}


async def test_the_sdk_starts_from_the_documents_journal_and_refresh_reads_it_again() -> None:
    done = StepRecord("r-doc", "research", StepStatus.SUCCEEDED, {"rows": 3}, 1, T0, T0)
    later = StepRecord("r-doc", "other", StepStatus.SUCCEEDED, {"x": 1}, 1, T0, T0)
    spy = SpyJournal({"research": done, "other": later})
    run = DurableRun("r-doc", spy, document=_doc("r-doc", [done.to_api()]), launch_journal=True)
    assert await run.step("research", lambda: {"rows": 99}) == {"rows": 3}  # no call, no load
    assert spy.loads == 0 and "other" not in await run.steps()
    assert await run.step("new", lambda: 7) == 7 and spy.loads == 0
    assert set(await run.refresh()) == {"research", "other", "new"} and spy.loads == 1


async def test_a_callers_own_journal_is_read_not_the_documents() -> None:
    """A worker's own journal stores its steps elsewhere: the gateway's copy in the document does
    not hold them, and starting from it would run a step that journal already holds again."""
    mine = StepRecord("r-own", "charge", StepStatus.SUCCEEDED, {"charged": 1}, 1, T0, T0)
    calls: list[str] = []
    env = {"HITL_GATEWAY_URL": "http://127.0.0.1:9", "HITL_RESUME_TOKEN": "t"}
    for make in (
        lambda spy: DurableRun("r-own", spy, document=_doc("r-own", [])),
        lambda spy: DurableRun.from_env(env=env, document=_doc("r-own", []), journal=spy),
    ):
        spy = SpyJournal({"charge": mine})
        made = make(spy)
        run = await made if not isinstance(made, DurableRun) else made
        assert await run.step("charge", lambda: calls.append("charged again")) == {"charged": 1}
        assert spy.loads == 1 and calls == []
        await run.close()


async def test_a_document_without_a_journal_or_of_another_run_is_loaded() -> None:
    done = StepRecord("r-load", "research", StepStatus.SUCCEEDED, {"rows": 3}, 1, T0, T0)
    for document in (
        {"run_id": "r-load"},  # an older gateway's document
        _doc("another-run", [{**done.to_api(), "run_id": "another-run", "output": {"rows": 99}}]),
        None,
    ):
        spy = SpyJournal({"research": done})
        run = DurableRun("r-load", spy, document=document)
        assert await run.step("research", lambda: {"rows": 0}) == {"rows": 3}
        assert spy.loads == 1


async def test_an_http_journal_from_a_document_makes_no_get(
    aiohttp_server: Callable[..., Any],
) -> None:
    seen: list[str] = []

    async def steps(request: web.Request) -> web.Response:
        seen.append(request.method)
        body = await request.json() if request.method == "PUT" else {}
        step = {"run_id": "r-http", "name": request.match_info.get("name", ""), "attempts": 1, **body}
        return web.json_response(step if request.method == "PUT" else {"run_id": "r-http", "items": []})

    app = web.Application()
    app.router.add_get("/v1/runs/{run_id}/steps", steps)
    app.router.add_put("/v1/runs/{run_id}/steps/{name}", steps)
    server = await aiohttp_server(app)
    client = GatewayClient(f"http://127.0.0.1:{server.port}", resume_token="t")
    async with DurableRun("r-http", HttpJournal(client), client, document=_doc("r-http", [])) as run:
        assert await run.step("work", lambda: {"ok": True}) == {"ok": True}
    assert seen == ["PUT"]


async def test_a_big_journal_is_left_out_of_the_document_and_the_sdk_gets_it() -> None:
    """A URL worker's receiver may limit a POST body: above the cap the launch document has no
    `journal`, and the SDK reads the steps from its journal instead."""
    from gateway.jobs.worker import LAUNCH_JOURNAL_MAX, launch_journal

    big = StepRecord("r-big", "research", StepStatus.SUCCEEDED, {"blob": "x" * LAUNCH_JOURNAL_MAX}, 1, T0, T0)
    small = StepRecord("r-big", "research", StepStatus.SUCCEEDED, {"rows": 3}, 1, T0, T0)
    assert launch_journal([small.to_api()]) == {"journal": [small.to_api()]}
    fields = launch_journal([big.to_api()])
    assert "journal" not in fields
    spy = SpyJournal({"research": big})
    run = DurableRun("r-big", spy, document={"run_id": "r-big"} | fields, launch_journal=True)
    assert await run.step("research", lambda: {"blob": ""}) == {"blob": "x" * LAUNCH_JOURNAL_MAX}
    assert spy.loads == 1
