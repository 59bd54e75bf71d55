"""One trace from the agent to the resumed step: the `traceparent` sent at suspend is kept with
the approval, its spans (suspend, card, decision, job launch) join that trace, and the worker
process gets TRACEPARENT and continues it. On a real gateway over HTTP on a real port, both
backends, spans read from OpenTelemetry's in-memory exporter."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from gateway.core.models import Outcome
from gateway.core.traces import Tracer, parse_traceparent
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.service.commands import Authority
from gateway.telemetry.tracing import OtelTracer
from gateway.testing import FakeClock, make_settings
from tests.conftest import AUTH, OPERATOR, suspend_body
from tests.procs import free_port
from tests.telemetry.spans import PROVIDER

FAKES = Path(__file__).parents[1] / "fakes"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
AGENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{AGENT_SPAN}-01"


@dataclass
class Gw:
    rt: Runtime
    url: str
    http: aiohttp.ClientSession
    out: Path

    async def suspend(self, headers: dict[str, str] | None = None, **body: Any) -> dict[str, Any]:
        payload = suspend_body(worker="receipt", channels=["web"], **body)
        async with self.http.post(f"{self.url}/v1/suspend", json=payload, headers=AUTH | (headers or {})) as r:
            assert r.status == 201, await r.text()
            reply: dict[str, Any] = await r.json()
            return reply

    async def approve(self, approval_id: str) -> None:
        url = f"{self.url}/v1/approvals/{approval_id}/decision"
        async with self.http.post(url, json={"outcome": "approve"}, headers=OPERATOR) as r:
            assert r.status == 200, await r.text()

    async def resume(self) -> dict[str, Any]:
        """Deliver what is due and run the resume job (the worker process writes `out`)."""
        await self.rt.outbox.drain()
        assert await self.rt.worker.drain() == 1
        job = await self.rt.store.get_job(json.loads(self.out.read_text())["env"]["HITL_APPROVAL_ID"])
        assert job is not None and job.status.value == "succeeded", job
        got: dict[str, Any] = json.loads(self.out.read_text())
        return got


async def start(
    aiohttp_server: Callable[..., Any], store_url: str, clock: FakeClock, tmp_path: Path, tracer: Tracer
) -> AsyncIterator[Gw]:
    port = free_port()
    out = tmp_path / "worker.json"
    worker = {"command": [sys.executable, str(FAKES / "trace_worker.py"), str(out)], "timeout": "30s"}
    settings = make_settings(
        store_url, {"server": {"public_url": f"http://127.0.0.1:{port}"}, "workers": {"receipt": worker}}
    )
    rt = Runtime(settings, clock=clock, owner="test", tracer=tracer)
    await aiohttp_server(create_app(settings, runtime=rt, background=False), port=port)
    async with aiohttp.ClientSession() as http:
        yield Gw(rt, f"http://127.0.0.1:{port}", http, out)


@pytest.fixture
async def gw(
    aiohttp_server: Callable[..., Any], store_url: str, clock: FakeClock, tmp_path: Path, spans: InMemorySpanExporter
) -> AsyncIterator[Gw]:
    async for g in start(aiohttp_server, store_url, clock, tmp_path, OtelTracer(PROVIDER)):
        yield g


def _hex(n: int, width: int) -> str:
    return format(n, f"0{width}x")


def named(spans: InMemorySpanExporter, approval_id: str) -> dict[str, list[ReadableSpan]]:
    """The approval's spans by name (each must carry its id)."""
    out: dict[str, list[ReadableSpan]] = {}
    for s in spans.get_finished_spans():
        if (s.attributes or {}).get("hitl.approval_id") == approval_id:
            out.setdefault(s.name, []).append(s)
    return out


pytestmark = pytest.mark.subprocess  # the resume job runs a real worker process


async def test_one_trace_from_the_agent_through_the_approval_to_the_resumed_step(
    gw: Gw, spans: InMemorySpanExporter
) -> None:
    reply = await gw.suspend({"traceparent": TRACEPARENT, "tracestate": "vendor=abc"})
    approval_id = reply["id"]
    await gw.approve(approval_id)
    worker = await gw.resume()

    by_name = named(spans, approval_id)
    assert set(by_name) == {"hitl.suspend", "hitl.card", "hitl.decision", "hitl.job.launch"}
    every = [s for group in by_name.values() for s in group]
    assert {_hex(s.context.trace_id, 32) for s in every} == {TRACE_ID}  # one trace, the agent's
    (suspend,) = by_name["hitl.suspend"]
    assert suspend.parent is not None and _hex(suspend.parent.span_id, 16) == AGENT_SPAN
    assert suspend.attributes is not None
    assert suspend.attributes["hitl.run_id"] == "run-1" and suspend.attributes["hitl.tool"] == "charge"
    assert str(suspend.attributes["hitl.agent"]).startswith("agent:")
    # the card (posted inline, then synced by the outbox), the decision and the launch: children of the suspend
    for s in every:
        if s is not suspend:
            assert s.parent is not None and s.parent.span_id == suspend.context.span_id, s.name
    assert sorted(str((s.attributes or {})["hitl.delivery"]) for s in by_name["hitl.card"]) == ["post", "sync"]
    (decision,) = by_name["hitl.decision"]
    assert decision.attributes is not None and decision.attributes["hitl.status"] == "approved"
    assert decision.attributes["hitl.decided_by"] == "operator"  # the kind: an identity may be an address
    (launch,) = by_name["hitl.job.launch"]
    assert launch.attributes is not None and launch.attributes["hitl.result"] == "succeeded"

    # the worker continues from the launch span: its TRACEPARENT, then its step's span
    launch_span = _hex(launch.context.span_id, 16)
    assert worker["env"]["TRACEPARENT"] == f"00-{TRACE_ID}-{launch_span}-01"
    assert worker["env"]["TRACESTATE"] == "vendor=abc"
    (step,) = worker["spans"]
    assert step["name"] == "hitl.step" and step["attributes"]["hitl.step"] == "send-receipt"
    assert step["attributes"]["hitl.approval_id"] == approval_id and step["attributes"]["hitl.tool"] == "charge"
    assert step["trace_id"] == TRACE_ID and step["parent"] == launch_span


async def test_the_body_s_traceparent_wins_over_the_header(gw: Gw, spans: InMemorySpanExporter) -> None:
    other = f"00-{'a' * 32}-{'b' * 16}-01"
    reply = await gw.suspend({"traceparent": other}, traceparent=TRACEPARENT)
    (suspend,) = named(spans, reply["id"])["hitl.suspend"]
    assert _hex(suspend.context.trace_id, 32) == TRACE_ID


async def test_without_a_traceparent_each_approval_starts_a_trace_of_its_own(
    gw: Gw, spans: InMemorySpanExporter
) -> None:
    first = await gw.suspend(run_id="run-a")
    second = await gw.suspend(run_id="run-b")
    await gw.approve(first["id"])
    traces = []
    for reply in (first, second):
        group = named(spans, reply["id"])
        (suspend,) = group["hitl.suspend"]
        assert suspend.parent is None  # a root
        assert {s.context.trace_id for g in group.values() for s in g} == {suspend.context.trace_id}
        traces.append(suspend.context.trace_id)
    assert traces[0] != traces[1]
    worker = await gw.resume()
    (launch,) = named(spans, first["id"])["hitl.job.launch"]
    # (flags 03: sampled, and the trace id is random, which a new trace of the SDK's says)
    assert worker["env"]["TRACEPARENT"] == f"00-{_hex(traces[0], 32)}-{_hex(launch.context.span_id, 16)}-03"
    assert worker["env"]["TRACESTATE"] is None


@pytest.mark.parametrize(
    "bad",
    [
        "garbage",
        f"00-{TRACE_ID}-{AGENT_SPAN}",  # no flags
        f"00-{TRACE_ID.upper()}-{AGENT_SPAN}-01",  # uppercase hex
        f"00-{'0' * 32}-{AGENT_SPAN}-01",  # an all-zero trace id
        f"00-{TRACE_ID}-{'0' * 16}-01",  # an all-zero span id
        f"ff-{TRACE_ID}-{AGENT_SPAN}-01",  # the forbidden version
        f"00-{TRACE_ID}-{AGENT_SPAN}-01-extra",  # version 00 has nothing after the flags
        "x" * 4000,  # (a header above 8 KiB is aiohttp's own 400, before any handler)
    ],
)
async def test_a_malformed_traceparent_is_ignored_and_a_new_trace_begins(
    gw: Gw, spans: InMemorySpanExporter, bad: str
) -> None:
    for reply in (await gw.suspend({"traceparent": bad}, run_id="run-h"), await gw.suspend(traceparent=bad)):
        (suspend,) = named(spans, reply["id"])["hitl.suspend"]
        assert suspend.parent is None and _hex(suspend.context.trace_id, 32) != TRACE_ID


async def test_a_later_version_s_traceparent_is_continued_as_version_00(gw: Gw, spans: InMemorySpanExporter) -> None:
    reply = await gw.suspend({"traceparent": f"01-{TRACE_ID}-{AGENT_SPAN}-01-what-comes-next"})
    (suspend,) = named(spans, reply["id"])["hitl.suspend"]
    assert _hex(suspend.context.trace_id, 32) == TRACE_ID
    assert suspend.parent is not None and _hex(suspend.parent.span_id, 16) == AGENT_SPAN


async def test_a_traceparent_that_is_not_a_string_is_a_400_naming_it(gw: Gw) -> None:
    payload = suspend_body(traceparent=42)
    async with gw.http.post(f"{gw.url}/v1/suspend", json=payload, headers=AUTH) as r:
        assert r.status == 400
        error = (await r.json())["error"]
    assert error["details"]["field"] == "traceparent" and "W3C traceparent" in error["message"]
    async with gw.http.get(f"{gw.url}/v1/approvals", headers=OPERATOR) as r:
        assert (await r.json())["items"] == []  # nothing was created


async def test_without_opentelemetry_the_worker_still_gets_the_agent_s_context(
    aiohttp_server: Callable[..., Any],
    store_url: str,
    clock: FakeClock,
    tmp_path: Path,
    spans: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The core's tracer (what the runtime uses when opentelemetry-api is not installed) records
    nothing and passes the agent's context through as it came; a gateway started inside someone
    else's trace never hands its own TRACEPARENT to a worker."""
    monkeypatch.setenv("TRACEPARENT", f"00-{'c' * 32}-{'d' * 16}-01")
    async for g in start(aiohttp_server, store_url, clock, tmp_path, Tracer()):
        first = await g.suspend({"traceparent": TRACEPARENT, "tracestate": "vendor=abc"}, run_id="run-a")
        await g.approve(first["id"])
        worker = await g.resume()
        assert worker["env"]["TRACEPARENT"] == TRACEPARENT and worker["env"]["TRACESTATE"] == "vendor=abc"
        second = await g.suspend(run_id="run-b")
        await g.approve(second["id"])
        worker = await g.resume()
        assert worker["env"]["TRACEPARENT"] is None
    assert not spans.get_finished_spans()


async def test_a_url_worker_gets_the_launch_span_s_context_as_w3c_headers(
    aiohttp_server: Callable[..., Any], store_url: str, clock: FakeClock, spans: InMemorySpanExporter
) -> None:
    got: list[dict[str, str]] = []

    async def hook(request: web.Request) -> web.Response:
        got.append({k.lower(): v for k, v in request.headers.items() if k.lower() in ("traceparent", "tracestate")})
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/hook", hook)
    receiver = await aiohttp_server(app)
    worker = {"url": f"http://127.0.0.1:{receiver.port}/hook", "allowed_hosts": ["127.0.0.1"]}
    settings = make_settings(store_url, {"workers": {"hook": worker}})
    rt = Runtime(settings, clock=clock, owner="t", tracer=OtelTracer(PROVIDER))
    await rt.start(background=False)
    try:
        trace = parse_traceparent(TRACEPARENT, "v=1")
        req = SuspendRequest(run_id="r", step="s", title="t", worker="hook", trace=trace)
        approval, _ = await rt.service.suspend(req)
        await rt.service.decide(approval.id, Outcome.APPROVE, "web:bob", authority=Authority.OPERATOR)
        assert await rt.worker.drain() == 1
    finally:
        await rt.stop()
    (launch,) = named(spans, approval.id)["hitl.job.launch"]
    assert got == [{"traceparent": f"00-{TRACE_ID}-{_hex(launch.context.span_id, 16)}-01", "tracestate": "v=1"}]


async def test_an_entrypoint_worker_continues_the_trace_too(
    aiohttp_server: Callable[..., Any], store_url: str, clock: FakeClock, tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    port = free_port()
    out = tmp_path / "entry.json"
    worker = {"entrypoint": "tests.fakes.trace_worker:entry", "timeout": "30s"}
    settings = make_settings(
        store_url, {"server": {"public_url": f"http://127.0.0.1:{port}"}, "workers": {"e": worker}}
    )
    rt = Runtime(settings, clock=clock, owner="test", tracer=OtelTracer(PROVIDER))
    await aiohttp_server(create_app(settings, runtime=rt, background=False), port=port)
    async with aiohttp.ClientSession() as http:
        gw = Gw(rt, f"http://127.0.0.1:{port}", http, out)
        payload = suspend_body(worker="e", state={"out": str(out)})
        async with http.post(f"{gw.url}/v1/suspend", json=payload, headers=AUTH | {"traceparent": TRACEPARENT}) as r:
            approval_id = (await r.json())["id"]
        await gw.approve(approval_id)
        worker_saw = await gw.resume()
    (launch,) = named(spans, approval_id)["hitl.job.launch"]
    launch_span = _hex(launch.context.span_id, 16)
    assert worker_saw["env"]["TRACEPARENT"] == f"00-{TRACE_ID}-{launch_span}-01"
    (step,) = worker_saw["spans"]
    assert step["trace_id"] == TRACE_ID and step["parent"] == launch_span
