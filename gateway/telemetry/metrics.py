"""Prometheus metrics: counters fed as an observer of commits, gauges read at scrape time.

Each Runtime gets its own `CollectorRegistry` (no global state, tests stay independent).
Counters count what this process did since it started; the gauges and the step-duration
summary are read from the store at scrape time, so they are the same on every replica.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric, SummaryMetricFamily
from prometheus_client.registry import Collector

from gateway.core.channels import parse_address
from gateway.core.events import FINAL, EventKind
from gateway.core.models import Approval, OutboxKind, Status
from gateway.core.observers import Observer
from gateway.core.webhooks import Backlog
from gateway.service.queries import Gauges

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Seconds: 1s .. 1 week. Human decisions take minutes to days.
DECISION_BUCKETS = (1, 5, 15, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 12 * 3600, 86400, 3 * 86400, 7 * 86400)
# Seconds a suspend was held for the resume jobs ([scheduler] admission_wait: 5 s at most).
HELD_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)
_FINAL_EVENTS = FINAL
_DELIVERY_RESULTS: dict[str, str] = {
    EventKind.CARD_POSTED: "ok",
    EventKind.CARD_SYNCED: "ok",
    EventKind.REMINDER_SENT: "ok",
    EventKind.DELIVERY_RETRY: "retry",
    EventKind.DELIVERY_FAILED: "failed",
    EventKind.DELIVERY_UNCERTAIN: "uncertain",
}


def _kind(address: str | None) -> str:
    """Bounded label values: the channel kind, never the target (a chat id, an address)."""
    return parse_address(address)[0] if address else "none"


class _StoreSnapshot(Collector):
    """Scrape-time families, filled by `Metrics.refresh()` just before each render."""

    def __init__(self) -> None:
        self.by_status: dict[str, int] = {}
        self.jobs: dict[str, int] = {}
        self.steps: list[dict[str, Any]] = []
        self.webhooks: list[Backlog] = []

    def collect(self) -> Iterator[Metric]:
        pending = GaugeMetricFamily("hitl_pending_approvals", "Approvals waiting for a decision")
        pending.add_metric([], self.by_status.get(Status.WAITING.value, 0))
        yield pending
        approvals = GaugeMetricFamily("hitl_approvals", "Approvals by status", labels=["status"])
        for status in Status:
            approvals.add_metric([status.value], self.by_status.get(status.value, 0))
        yield approvals
        jobs = GaugeMetricFamily("hitl_resume_jobs", "Resume jobs by status", labels=["status"])
        for job_status, n in sorted(self.jobs.items()):
            jobs.add_metric([job_status], n)
        yield jobs
        steps = SummaryMetricFamily(
            "hitl_step_duration_seconds", "Duration of journaled steps (from the journal)", labels=["step"]
        )
        for row in self.steps:
            steps.add_metric(
                [str(row["name"])], count_value=int(row["runs"]), sum_value=float(row["total_seconds"] or 0)
            )
        yield steps
        events = GaugeMetricFamily(
            "hitl_webhook_events", "Outbound events not delivered, by webhook and state", labels=["webhook", "state"]
        )
        for b in self.webhooks:
            for state, n in (("pending", b.pending), ("failing", b.failing), ("given_up", b.given_up)):
                events.add_metric([b.name, state], n)
        yield events


class Metrics(Observer):
    """The gateway's Prometheus metrics: an observer of commits, deliveries and worker attempts
    (the runtime adds it to its observers), plus gauges read from the store at each scrape."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.decisions = Counter("hitl_decisions", "Final decisions", ["outcome", "channel", "source"], registry=r)
        self.time_to_decision = Histogram(
            "hitl_time_to_decision_seconds",
            "From suspend to the final decision",
            ["source"],
            buckets=DECISION_BUCKETS,
            registry=r,
        )
        self.timeouts = Counter("hitl_timeouts", "Deadlines reached, by what the policy did", ["outcome"], registry=r)
        self.deliveries = Counter(
            "hitl_outbox_deliveries", "Card deliveries by result", ["channel", "kind", "result"], registry=r
        )
        self.retries = Counter("hitl_outbox_retries", "Card deliveries scheduled for a retry", ["channel"], registry=r)
        self.attempts = Counter("hitl_worker_attempts", "Worker attempts by result", ["worker", "result"], registry=r)
        self.attempt_seconds = Histogram(
            "hitl_worker_attempt_duration_seconds", "Worker attempt durations", ["worker"], registry=r
        )
        self.suspends_held = Histogram(
            "hitl_suspend_held_seconds",
            "Suspends held while decided approvals' resume jobs waited to launch, and how long",
            buckets=HELD_BUCKETS,
            registry=r,
        )
        self._snapshot = _StoreSnapshot()
        r.register(self._snapshot)

    # ---------------------------------------------------------------- Observer
    def transition(self, approval: Approval, event: str) -> None:
        if event == EventKind.ESCALATED:
            self.timeouts.labels("escalate").inc()
            return
        decision = approval.decision
        if event not in _FINAL_EVENTS or decision is None:
            return
        if event == EventKind.TIMED_OUT:
            self.timeouts.labels(decision.outcome.value).inc()
        self.decisions.labels(decision.outcome.value, _kind(decision.channel), decision.source.value).inc()
        elapsed = (decision.decided_at - approval.created_at).total_seconds()
        self.time_to_decision.labels(decision.source.value).observe(max(elapsed, 0.0))

    def delivered(self, address: str, kind: OutboxKind, event: str) -> None:
        """A delivery recorded by the outbox, or in the suspend's own commit (web cards)."""
        result = _DELIVERY_RESULTS.get(event)
        if result is None:
            return
        channel = _kind(address)
        self.deliveries.labels(channel, kind.value, result).inc()
        if result == "retry":
            self.retries.labels(channel).inc()

    def attempt(self, worker: str, result: str, seconds: float) -> None:
        self.attempts.labels(worker, result).inc()
        self.attempt_seconds.labels(worker).observe(max(seconds, 0.0))

    def suspend_held(self, seconds: float) -> None:
        """A suspend waited for the resume jobs before it was admitted (gateway.core.admission)."""
        self.suspends_held.observe(max(seconds, 0.0))

    # ---------------------------------------------------------------- scrape
    def render(self, gauges: Gauges) -> bytes:
        """The text format: this process's counters, and the gauges read at this scrape
        (`Reads.gauges`)."""
        snap = self._snapshot
        snap.by_status, snap.jobs, snap.steps = gauges.by_status, gauges.jobs, gauges.steps
        snap.webhooks = gauges.webhooks
        return generate_latest(self.registry)
