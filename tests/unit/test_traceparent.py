"""W3C Trace Context parsing (gateway.core.traces): what is continued, what is ignored."""

from __future__ import annotations

import pytest

from gateway.core.traces import TRACESTATE_MAX, TraceContext, Tracer, parse_traceparent

TID, SID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
GOOD = f"00-{TID}-{SID}-01"


def test_a_valid_traceparent_is_kept_with_its_tracestate() -> None:
    ctx = parse_traceparent(f"  {GOOD} ", "congo=t61rcWkgMzE, rojo=00f067aa0ba902b7")
    assert ctx == TraceContext(GOOD, "congo=t61rcWkgMzE, rojo=00f067aa0ba902b7")
    assert (ctx.trace_id, ctx.span_id) == (TID, SID)
    assert ctx.env() == {"TRACEPARENT": GOOD, "TRACESTATE": "congo=t61rcWkgMzE, rojo=00f067aa0ba902b7"}
    assert ctx.headers() == {"traceparent": GOOD, "tracestate": "congo=t61rcWkgMzE, rojo=00f067aa0ba902b7"}


def test_flags_are_kept_as_sent() -> None:
    ctx = parse_traceparent(f"00-{TID}-{SID}-00")
    assert ctx is not None and ctx.traceparent.endswith("-00")


def test_a_later_version_is_read_by_its_first_four_fields_and_sent_on_as_00() -> None:
    assert parse_traceparent(f"cc-{TID}-{SID}-01-more") == TraceContext(GOOD)
    assert parse_traceparent(f"cc-{TID}-{SID}-01") == TraceContext(GOOD)
    assert parse_traceparent(f"cc-{TID}-{SID}-01more") is None


@pytest.mark.parametrize(
    "bad",
    [
        None,
        42,
        "",
        "garbage",
        f"00-{TID}-{SID}",
        f"00-{TID}-{SID}-1",
        f"00-{TID.upper()}-{SID}-01",
        f"00-{'0' * 32}-{SID}-01",
        f"00-{TID}-{'0' * 16}-01",
        f"ff-{TID}-{SID}-01",
        f"00-{TID}-{SID}-01-",
        f"00_{TID}_{SID}_01",
        f"0-{TID}-{SID}-01",
        f"00-{TID[:-1]}-{SID}-01",
        f"00-{TID}-{SID}-0g",
    ],
)
def test_a_malformed_traceparent_is_ignored(bad: object) -> None:
    assert parse_traceparent(bad, "vendor=1") is None


@pytest.mark.parametrize("state", ["", "   ", "x" * (TRACESTATE_MAX + 1), "a=1\nb=2", "é=1", 7])
def test_a_bad_tracestate_is_dropped_alone(state: object) -> None:
    assert parse_traceparent(GOOD, state) == TraceContext(GOOD, None)
    assert TraceContext(GOOD).env() == {"TRACEPARENT": GOOD}


def test_the_core_tracer_records_nothing_and_passes_the_parent_on() -> None:
    parent = TraceContext(GOOD, "v=1")
    with Tracer().span("hitl.suspend", parent, {"hitl.run_id": "r"}) as span:
        span.set("hitl.approval_id", "a")
        span.failed("why")
        assert span.context is parent
    with Tracer().span("hitl.suspend", None, {}) as span:
        assert span.context is None
