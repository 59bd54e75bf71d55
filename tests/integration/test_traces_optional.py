"""Tracing is optional: without opentelemetry-api installed everything works, with no spans, and
the agent's trace context still reaches the worker. Run in a fresh interpreter where importing
opentelemetry fails, as it does when the package is not installed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess

SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    sys.modules["opentelemetry"] = None  # as if it were not installed: every import of it fails

    from gateway.core.errors import ConfigError
    from gateway.core.models import Outcome
    from gateway.core.traces import Tracer, parse_traceparent
    from gateway.jobs.launch import Launch
    from gateway.runtime import Runtime
    from gateway.service import SuspendRequest
    from gateway.service.commands import Authority
    from gateway.settings.telemetry import TelemetrySettings
    from gateway.telemetry import tracing
    from gateway.testing import make_settings
    from hitl_sdk import traces as sdk_traces

    TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    async def main(db):
        assert type(tracing.tracer()) is Tracer
        rt = Runtime(make_settings(db, {"workers": {"w": {"command": ["true"]}}}), owner="t")
        assert type(rt.tracer) is Tracer
        await rt.start(background=False)
        try:
            req = SuspendRequest(run_id="r", step="s", title="t", worker="w", trace=parse_traceparent(TP, "v=1"))
            approval, created = await rt.service.suspend(req)
            assert created and approval.trace is not None and approval.trace.traceparent == TP
            decided = await rt.service.decide(approval.id, Outcome.APPROVE, "web:bob", authority=Authority.OPERATOR)
            assert decided.status.value == "approved"
            stored = await rt.store.get_approval(approval.id)
            launch = Launch(approval.id, {}, "tok", "http://g", "k", trace=stored.trace)
            assert launch.env()["TRACEPARENT"] == TP and launch.env()["TRACESTATE"] == "v=1"
        finally:
            await rt.stop()
        assert sdk_traces.current_carrier() == {}
        with sdk_traces.span("hitl.step", {"traceparent": TP}, {}):
            pass
        try:
            tracing.start_exporter(TelemetrySettings("http://127.0.0.1:4318"), {})
        except ConfigError as exc:
            assert "telemetry.otlp_endpoint" in str(exc) and "traces" in str(exc), exc
        else:
            raise AssertionError("an exporter without the extra")
        print("ok")

    asyncio.run(main(sys.argv[1]))
    """
)


def test_without_opentelemetry_nothing_is_traced_and_the_context_still_travels(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'gateway.db'}"
    done = subprocess.run([sys.executable, "-c", SCRIPT, db], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"
