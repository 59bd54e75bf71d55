"""OpenTelemetry spans, and the OTLP exporter `serve` starts: the one module that imports it.

opentelemetry-api is optional. Without it, `tracer()` is the core's `Tracer`, which records
nothing but still passes the agent's `traceparent` on to the worker. With it, spans go to the
global tracer provider: the exporter started here from `[telemetry] otlp_endpoint` (or the
standard OTEL_EXPORTER_OTLP_* variables), or whatever the host process set up (for example
`opentelemetry-instrument`); with neither, the API's own no-op provider.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from gateway.core.errors import ConfigError
from gateway.core.events import FINAL
from gateway.core.models import Approval
from gateway.core.observers import Observer
from gateway.core.traces import DECISION, Attributes, Span, TraceContext, Tracer, approval_attributes
from gateway.settings.telemetry import TelemetrySettings

try:
    from opentelemetry import trace as otel
    from opentelemetry.context import Context
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ImportError:  # the extra `traces` (or anything that brings opentelemetry-api) is not installed
    otel = None  # type: ignore[assignment]

INSTRUMENTATION = "hitl-gateway"
TRACES_PATH = "/v1/traces"  # OTLP/HTTP: what the exporter appends to a base endpoint
FLUSH_TIMEOUT = 5.0  # seconds the last spans get at the end of serve


class OtelSpan(Span):
    def __init__(self, span: Any, parent: TraceContext | None) -> None:
        super().__init__(parent)
        self._span = span

    @property
    def context(self) -> TraceContext | None:
        """This span's context; the parent's when it has none (the API's no-op provider gives a
        new trace's span an invalid context, and a child its parent's)."""
        ctx = self._span.get_span_context()
        if not ctx.is_valid:
            return self.parent
        state = ctx.trace_state.to_header() or None  # the caller's, carried by the span context
        return TraceContext(f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{ctx.trace_flags:02x}", state)

    def set(self, name: str, value: str | int | bool) -> None:
        self._span.set_attribute(name, value)

    def failed(self, reason: str) -> None:
        self._span.set_status(otel.Status(otel.StatusCode.ERROR, reason))


class OtelTracer(Tracer):
    """Spans of the global tracer provider (or `provider`), each under the given parent only:
    an approval's spans never nest under whatever context the calling task happens to carry."""

    def __init__(self, provider: Any = None) -> None:
        self._own = provider is not None
        self._tracer = otel.get_tracer(INSTRUMENTATION, tracer_provider=provider)

    @contextmanager
    def span(self, name: str, parent: TraceContext | None, attributes: Attributes) -> Iterator[Span]:
        if not self._own and isinstance(otel.get_tracer_provider(), otel.ProxyTracerProvider):
            # No provider set up (no exporter, no auto-instrumentation): the API would record
            # nothing anyway. Pass the context on at no cost: a timeout storm decides 10^5 at once.
            yield Span(parent)
            return
        context = TraceContextTextMapPropagator().extract(parent.headers()) if parent else Context()
        span = self._tracer.start_span(name, context=context, attributes=dict(attributes))
        try:
            yield OtelSpan(span, parent)
        except BaseException as exc:
            span.record_exception(exc)
            span.set_status(otel.Status(otel.StatusCode.ERROR, type(exc).__name__))
            raise
        finally:
            span.end()


def tracer(provider: Any = None) -> Tracer:
    """The gateway's tracer: OpenTelemetry's when the API is installed, else one that only
    passes contexts on."""
    return Tracer() if otel is None else OtelTracer(provider)


class DecisionSpans(Observer):
    """A span per decision (approved, rejected, timed out, cancelled), told after its commit,
    in the approval's trace: whoever decided (a person on any channel, a rule, the SLA clock)."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer

    def transition(self, approval: Approval, event: str) -> None:
        if event not in FINAL:
            return
        d = approval.decision
        extra: dict[str, str | int | bool] = {"hitl.status": approval.status.value, "hitl.event": event}
        if d is not None:  # who decided by kind only: an identity can be an address (personal data)
            extra |= {"hitl.decided_by": d.decided_by.partition(":")[0], "hitl.source": d.source.value}
        attrs = approval_attributes(approval.id, approval.run_id, approval.step, approval.agent, **extra)
        with self.tracer.span(DECISION, approval.trace, attrs):
            pass


def traces_url(endpoint: str) -> str:
    """`otlp_endpoint` as the exporter takes it: a base URL (no path) gets /v1/traces, as the
    OTEL_EXPORTER_OTLP_ENDPOINT variable does; a URL with a path is used as it is."""
    return endpoint.rstrip("/") + TRACES_PATH if urlsplit(endpoint).path in ("", "/") else endpoint


def start_exporter(cfg: TelemetrySettings, env: Mapping[str, str]) -> Callable[[], None] | None:
    """At serve start: export spans over OTLP/HTTP to `cfg.otlp_endpoint`, else to the
    endpoint of the standard variables, if one is set; None (no exporter) otherwise. Returns
    what flushes and stops it. `env` is the entry point's environment (the exporter itself also
    reads OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION...)."""
    from_env = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if not (cfg.otlp_endpoint or from_env) or env.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        hint = f"exporting traces needs the extra `traces` ({exc}): pip install ./sdk '.[traces]'"
        raise ConfigError("telemetry.otlp_endpoint", hint) from None
    exporter = OTLPSpanExporter(endpoint=traces_url(cfg.otlp_endpoint) if cfg.otlp_endpoint else None)
    provider = TracerProvider(resource=Resource.create({"service.name": cfg.service_name}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    otel.set_tracer_provider(provider)

    def stop() -> None:
        # Flush what is left, on a thread of its own: a collector that does not answer must not
        # hold the process past its shutdown.
        worker = threading.Thread(target=provider.shutdown, name="otlp-shutdown", daemon=True)
        worker.start()
        worker.join(FLUSH_TIMEOUT)

    return stop


__all__ = ["DecisionSpans", "OtelTracer", "start_exporter", "tracer", "traces_url"]
