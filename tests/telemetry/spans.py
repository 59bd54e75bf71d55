"""Spans recorded by OpenTelemetry's SDK into its in-memory exporter.

The gateway's runtime gets a tracer of its own provider (`PROVIDER`). The agent SDK uses the
global provider, which a process sets once: a test's `spans` switch it on for that test only, so
that the tests after it record nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class _Switch(SpanProcessor):
    """Hands each ended span to the exporter of the test running now, if any."""

    exporter: InMemorySpanExporter | None = None

    def on_end(self, span: ReadableSpan) -> None:
        if self.exporter is not None:
            self.exporter.export((span,))


_SWITCH = _Switch()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(_SWITCH)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Every span this test ends, of the gateway (`PROVIDER`) or of the SDK (the global one)."""
    if trace.get_tracer_provider() is not PROVIDER:
        trace.set_tracer_provider(PROVIDER)  # once per process: the API refuses a second one
    _SWITCH.exporter = InMemorySpanExporter()
    yield _SWITCH.exporter
    _SWITCH.exporter = None
