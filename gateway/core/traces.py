"""Trace context: the W3C `traceparent` an agent sends at suspend (pure), and the tracer port.

An approval keeps the trace context of its suspend, so that the spans of its cards, its decision
and its resume job join the agent's trace, and the worker continues it (`TRACEPARENT`). Parsing
follows W3C Trace Context level 1: a value that does not parse is ignored, never an error, as the
specification asks of a receiver (a new trace begins instead).

`Tracer` is the port the service, the outbox and the worker report spans to. It does nothing
but pass the parent's context on, so that, without OpenTelemetry installed, a worker still gets
the agent's `TRACEPARENT`. `gateway.telemetry.tracing` implements it over opentelemetry-api;
the runtime picks it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

# version-traceid-parentid-flags, lowercase hex (W3C Trace Context, section 3.2).
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
_ZERO_TRACE, _ZERO_SPAN = "0" * 32, "0" * 16
TRACESTATE_MAX = 512  # characters; the specification lets a receiver drop a longer one
_TRACESTATE = re.compile(r"[\x20-\x7e]*")  # printable ASCII; the list's own syntax is the tracer's

# Span names and attributes, one spelling for every component.
SUSPEND = "hitl.suspend"
CARD = "hitl.card"  # a card's post, sync or reminder (attribute hitl.delivery)
DECISION = "hitl.decision"
JOB_LAUNCH = "hitl.job.launch"
APPROVAL_ID = "hitl.approval_id"
RUN_ID = "hitl.run_id"
AGENT = "hitl.agent"
TOOL = "hitl.tool"  # the step the agent asked about: its tool call
Attributes = Mapping[str, str | int | bool]


@dataclass(frozen=True, slots=True)
class TraceContext:
    """A valid `traceparent` (normalised to version 00) and its `tracestate`, if any."""

    traceparent: str
    tracestate: str | None = None

    @property
    def trace_id(self) -> str:
        return self.traceparent[3:35]

    @property
    def span_id(self) -> str:
        return self.traceparent[36:52]

    def headers(self) -> dict[str, str]:
        """As HTTP headers (a `url` worker's request)."""
        return {"traceparent": self.traceparent} | ({"tracestate": self.tracestate} if self.tracestate else {})

    def env(self) -> dict[str, str]:
        """As a worker's environment: TRACEPARENT, and TRACESTATE when there is one."""
        return {"TRACEPARENT": self.traceparent} | ({"TRACESTATE": self.tracestate} if self.tracestate else {})


def parse_traceparent(value: object, tracestate: object = None) -> TraceContext | None:
    """The context in `value`, or None if it is missing or malformed (ignored, per the
    specification). A later version's extra fields are dropped: what we send on is version 00.
    A `tracestate` that is not printable ASCII of at most 512 characters is dropped alone."""
    if not isinstance(value, str):
        return None
    text = value.strip()  # hex is lowercase: an uppercase one is malformed (the specification)
    m = _TRACEPARENT.match(text)
    if m is None:
        return None
    version, trace_id, span_id, flags = m.groups()
    if version == "ff" or trace_id == _ZERO_TRACE or span_id == _ZERO_SPAN:
        return None
    if len(text) != 55 and (version == "00" or text[55] != "-"):  # 00 has nothing after; later ones "-..."
        return None
    state = tracestate.strip() if isinstance(tracestate, str) else None
    if not state or len(state) > TRACESTATE_MAX or not _TRACESTATE.fullmatch(state):
        state = None
    return TraceContext(f"00-{trace_id}-{span_id}-{flags}", state)


class Span:
    """A span being recorded. This one records nothing: its context is its parent's, so that
    the context still travels on without a tracer."""

    def __init__(self, parent: TraceContext | None) -> None:
        self.parent = parent

    @property
    def context(self) -> TraceContext | None:
        """What a child (or the worker) continues from."""
        return self.parent

    def set(self, name: str, value: str | int | bool) -> None:
        """Add an attribute."""

    def failed(self, reason: str) -> None:
        """Mark the span as an error, with why."""


class Tracer:
    """Opens spans under a given parent (an approval's stored context; None: a new trace)."""

    @contextmanager
    def span(self, name: str, parent: TraceContext | None, attributes: Attributes) -> Iterator[Span]:
        yield Span(parent)


def approval_attributes(
    approval_id: str, run_id: str, step: str, agent: str | None, **more: str | int | bool
) -> dict[str, str | int | bool]:
    """What every span of an approval carries (no args or state: those may be personal data)."""
    return {APPROVAL_ID: approval_id, RUN_ID: run_id, TOOL: step} | ({AGENT: agent} if agent else {}) | more


__all__ = [
    "AGENT",
    "APPROVAL_ID",
    "CARD",
    "DECISION",
    "JOB_LAUNCH",
    "RUN_ID",
    "SUSPEND",
    "TOOL",
    "Span",
    "TraceContext",
    "Tracer",
    "approval_attributes",
    "parse_traceparent",
]
