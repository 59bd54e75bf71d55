"""W3C trace context for the agent side, when OpenTelemetry is installed (nothing otherwise).

At suspend, the client sends the current span's `traceparent` (and `tracestate`), so that the
approval's spans join the agent's trace. In a worker the gateway launched, `TRACEPARENT` (and
`TRACESTATE`) hold the gateway's job launch span: `DurableRun.from_env` keeps it, and the run's
step spans are its children, unless the worker code already runs inside a span of its own.
The SDK only uses opentelemetry-api; the process that wants the spans exported sets up a tracer
provider (the SDK, `opentelemetry-instrument`, ...).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

try:
    from opentelemetry import trace as otel
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ImportError:  # opentelemetry-api is not installed: no spans, no context sent
    otel = None  # type: ignore[assignment]

__all__ = ["carrier_from_env", "current_carrier", "span"]

INSTRUMENTATION = "hitl_sdk"
STEP = "hitl.step"
APPROVAL = "hitl.approval.request"


def current_carrier() -> dict[str, str]:
    """The current span's `traceparent` and `tracestate` (empty: no OpenTelemetry, or no span)."""
    if otel is None or not otel.get_current_span().get_span_context().is_valid:
        return {}
    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return carrier


def carrier_from_env(env: Mapping[str, str]) -> dict[str, str]:
    """What the gateway gave a launched worker: TRACEPARENT and TRACESTATE, as a carrier."""
    carrier = {"traceparent": env.get("TRACEPARENT", ""), "tracestate": env.get("TRACESTATE", "")}
    return {k: v for k, v in carrier.items() if v}


@contextmanager
def span(name: str, parent: Mapping[str, str], attributes: Mapping[str, Any]) -> Iterator[None]:
    """A span, current while the block runs: a child of the current span if there is one, else
    of `parent` (the worker's TRACEPARENT), else the root of a new trace."""
    if otel is None:
        yield
        return
    context = None
    if not otel.get_current_span().get_span_context().is_valid and parent:
        context = TraceContextTextMapPropagator().extract(dict(parent))
    tracer = otel.get_tracer(INSTRUMENTATION)
    with tracer.start_as_current_span(name, context=context, attributes=dict(attributes)):
        yield
