"""A resume worker that writes what it got of the trace to a file: its TRACEPARENT and TRACESTATE,
and the spans of a journaled step it runs with the SDK (`DurableRun.from_env`), recorded by
OpenTelemetry's in-memory exporter. Usage: trace_worker.py OUT; or, as an `entrypoint` worker,
`tests.fakes.trace_worker:entry`, which writes to the path in the suspend's state (`out`)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from hitl_sdk import DurableRun
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


async def main(document: dict[str, Any] | None = None) -> dict[str, object]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    env = {k: os.environ.get(k) for k in ("TRACEPARENT", "TRACESTATE", "HITL_APPROVAL_ID")}
    async with await DurableRun.from_env(document=document) as run:
        await run.step("send-receipt", lambda: "sent")
    spans = [
        {
            "name": s.name,
            "trace_id": format(s.context.trace_id, "032x"),
            "span_id": format(s.context.span_id, "016x"),
            "parent": format(s.parent.span_id, "016x") if s.parent else None,
            "attributes": dict(s.attributes or {}),
        }
        for s in exporter.get_finished_spans()
    ]
    return {"env": env, "spans": spans}


async def entry(document: dict[str, Any]) -> None:
    got = await main(document)
    await asyncio.to_thread(Path(document["state"]["out"]).write_text, json.dumps(got))


if __name__ == "__main__":
    got = asyncio.run(main())
    with open(sys.argv[1], "w") as f:
        json.dump(got, f)
