"""The agent SDK's side of a trace: `suspend` sends the current span's context, and a run's
step spans continue TRACEPARENT unless the worker's code runs inside a span of its own."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from hitl_sdk import DurableRun, GatewayClient, StepRecord, Suspended
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.telemetry.tracing import OtelTracer
from gateway.testing import TEST_API_KEY, FakeClock, make_settings
from tests.procs import free_port
from tests.telemetry.spans import PROVIDER

TID, SID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"


class MemoryJournal:
    """A journal in a dict: the worker-side tests below need no gateway."""

    def __init__(self) -> None:
        self.steps: dict[str, StepRecord] = {}

    async def load(self, run_id: str) -> dict[str, StepRecord]:
        return dict(self.steps)

    async def record(self, step: StepRecord) -> StepRecord:
        return self.steps.setdefault(step.name, step)

    async def close(self) -> None:
        return None


@pytest.fixture
async def url(
    aiohttp_server: Callable[..., Any], store_url: str, clock: FakeClock, tmp_path: Path
) -> AsyncIterator[str]:
    port = free_port()
    settings = make_settings(store_url, {"server": {"public_url": f"http://127.0.0.1:{port}"}})
    rt = Runtime(settings, clock=clock, owner="test", tracer=OtelTracer(PROVIDER))
    await aiohttp_server(create_app(settings, runtime=rt, background=False), port=port)
    yield f"http://127.0.0.1:{port}"


async def test_the_agent_s_span_is_the_parent_of_its_approval(url: str, spans: InMemorySpanExporter) -> None:
    tracer = trace.get_tracer("the-agent")
    with tracer.start_as_current_span("agent.run") as agent:
        async with await DurableRun.open("inv-1", gateway_url=url, api_key=TEST_API_KEY) as run:
            with pytest.raises(Suspended) as suspended:
                await run.approval("charge", title="Charge $42", args={"amount": 42})
    by_name = {s.name: s for s in spans.get_finished_spans()}
    request, suspend = by_name["hitl.approval.request"], by_name["hitl.suspend"]
    assert {s.context.trace_id for s in by_name.values()} == {agent.get_span_context().trace_id}
    assert request.parent is not None and request.parent.span_id == agent.get_span_context().span_id
    assert suspend.parent is not None and suspend.parent.span_id == request.context.span_id
    assert (suspend.attributes or {})["hitl.approval_id"] == suspended.value.approval_id


async def test_an_explicit_traceparent_is_sent_as_given(url: str, spans: InMemorySpanExporter) -> None:
    async with await DurableRun.open("inv-2", gateway_url=url, api_key=TEST_API_KEY) as run:
        assert run.client is not None
        await run.client.suspend(run_id="inv-2", step="charge", title="t", traceparent=f"00-{TID}-{SID}-01")
    (suspend,) = [s for s in spans.get_finished_spans() if s.name == "hitl.suspend"]
    assert format(suspend.context.trace_id, "032x") == TID
    assert suspend.parent is not None and format(suspend.parent.span_id, "016x") == SID


async def test_with_no_span_nothing_is_sent_and_the_approval_starts_a_trace(
    url: str, spans: InMemorySpanExporter
) -> None:
    async with await DurableRun.open("inv-3", gateway_url=url, api_key=TEST_API_KEY) as run:
        assert run.client is not None
        await run.client.suspend(run_id="inv-3", step="charge", title="t")
    (suspend,) = [s for s in spans.get_finished_spans() if s.name == "hitl.suspend"]
    assert suspend.parent is None


def _worker_run(traceparent: str) -> DurableRun:
    document = {"run_id": "inv-9", "step": "charge", "approval": {}}
    return DurableRun("inv-9", MemoryJournal(), None, document=document, trace_parent={"traceparent": traceparent})


async def test_a_worker_s_steps_continue_its_traceparent(spans: InMemorySpanExporter) -> None:
    env = {"HITL_GATEWAY_URL": "http://127.0.0.1:1", "HITL_RESUME_TOKEN": "t", "TRACEPARENT": f"00-{TID}-{SID}-01"}
    run = await DurableRun.from_env(env=env, document={"run_id": "inv-9"}, journal=MemoryJournal())
    assert run.trace_parent == {"traceparent": f"00-{TID}-{SID}-01"}
    assert await run.step("send", lambda: "sent") == "sent"
    assert await run.step("send", lambda: "again") == "sent"  # replayed: no second span
    (step,) = spans.get_finished_spans()
    assert (step.name, (step.attributes or {})["hitl.step"]) == ("hitl.step", "send")
    assert format(step.context.trace_id, "032x") == TID
    assert step.parent is not None and format(step.parent.span_id, "016x") == SID
    await run.close()


async def test_a_span_of_the_worker_s_own_is_the_parent_instead(spans: InMemorySpanExporter) -> None:
    run = _worker_run(f"00-{TID}-{SID}-01")
    with trace.get_tracer("worker").start_as_current_span("worker.main") as own:
        await run.step("send", lambda: "sent")
    step = next(s for s in spans.get_finished_spans() if s.name == "hitl.step")
    assert step.parent is not None and step.parent.span_id == own.get_span_context().span_id


async def test_the_current_context_goes_as_headers_an_older_gateway_ignores(
    aiohttp_server: Callable[..., Any], spans: InMemorySpanExporter
) -> None:
    seen: list[tuple[dict[str, str], dict[str, Any]]] = []

    async def suspend(request: web.Request) -> web.Response:
        seen.append((dict(request.headers), await request.json()))
        return web.json_response({"id": "a1", "status": "waiting_approval"}, status=201)

    app = web.Application()
    app.router.add_post("/v1/suspend", suspend)
    server = await aiohttp_server(app)
    async with GatewayClient(f"http://127.0.0.1:{server.port}", "key") as client:
        with trace.get_tracer("the-agent").start_as_current_span("agent.run") as agent:
            await client.suspend(run_id="r", step="s", title="t")
        await client.suspend(run_id="r", step="s", title="t", traceparent=f"00-{TID}-{SID}-01")
    (auto_headers, auto_body), (_, explicit_body) = seen
    ctx = agent.get_span_context()
    assert auto_headers["traceparent"] == f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{ctx.trace_flags:02x}"
    assert "traceparent" not in auto_body
    assert explicit_body["traceparent"] == f"00-{TID}-{SID}-01"
