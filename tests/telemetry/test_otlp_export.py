"""`serve` exports spans over OTLP/HTTP when `[telemetry] otlp_endpoint` (or the standard
OTEL_EXPORTER_OTLP_ENDPOINT) names a collector: a real serve process, a real HTTP receiver that
decodes what it gets with OpenTelemetry's own protobuf types."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.conftest import AUTH, suspend_body
from tests.procs import Gateway, free_port, write_config

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

pytestmark = pytest.mark.subprocess
TID, SID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"


class Collector:
    """Receives OTLP/HTTP exports: the spans' (service, name, trace id, approval id)."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, str, str, str]] = []
        self.content_types: set[str] = set()

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/traces", self.receive)
        return app

    async def receive(self, request: web.Request) -> web.Response:
        self.content_types.add(request.content_type)
        export = ExportTraceServiceRequest.FromString(await request.read())
        for rs in export.resource_spans:
            service = next(a.value.string_value for a in rs.resource.attributes if a.key == "service.name")
            for ss in rs.scope_spans:
                for s in ss.spans:
                    attrs = {a.key: a.value.string_value for a in s.attributes}
                    self.spans.append((service, s.name, s.trace_id.hex(), attrs.get("hitl.approval_id", "")))
        return web.Response(content_type="application/x-protobuf", body=b"")


@pytest.mark.parametrize("via", ["config", "env"])
async def test_serve_exports_the_spans_to_the_configured_collector(
    aiohttp_server: Callable[..., Any], tmp_path: Path, via: str
) -> None:
    collector = Collector()
    server = await aiohttp_server(collector.app())
    endpoint = f"http://127.0.0.1:{server.port}"
    port = free_port()
    extra = f'[telemetry]\notlp_endpoint = "{endpoint}"\nservice_name = "gw-test"\n' if via == "config" else ""
    config = write_config(tmp_path / "gw.toml", f"sqlite:///{tmp_path / 'gw.db'}", port, extra)
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"} if via == "env" else {}
    gw = Gateway(config, port, tmp_path / "gw.log", env)
    await asyncio.to_thread(gw.start)
    try:
        async with aiohttp.ClientSession() as http:
            body = suspend_body()
            headers = AUTH | {"traceparent": f"00-{TID}-{SID}-01"}
            async with http.post(f"{gw.url}/v1/suspend", json=body, headers=headers) as resp:
                assert resp.status == 201
                approval_id = (await resp.json())["id"]
        assert await asyncio.to_thread(gw.terminate) == 0  # the exporter flushes at the end of serve
    finally:
        gw.stop()
    service = "gw-test" if via == "config" else "hitl-gateway"
    assert (service, "hitl.suspend", TID, approval_id) in collector.spans
    assert (service, "hitl.card", TID, approval_id) in collector.spans
    assert collector.content_types == {"application/x-protobuf"}
