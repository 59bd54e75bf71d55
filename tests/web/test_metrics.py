"""/metrics after a known sequence: parse the Prometheus text format and check the values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from gateway.core.channels import Attempt, DeliveryError, OutgoingCard, WebChannel
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.testing import FakeClock
from tests.conftest import OPERATOR
from tests.web.conftest import csrf_of, journal, sign_in


class FlakyWeb(WebChannel):
    """The web channel, except that its first post answers like a 429."""

    def __init__(self) -> None:
        self.failures = 1

    async def post_card(self, card: OutgoingCard, attempts: Sequence[Attempt]) -> str:
        if self.failures:
            self.failures -= 1
            raise DeliveryError("429 Too Many Requests", transient=True, retry_after=1.0)
        return await super().post_card(card, attempts)


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(all_samples: dict[Any, float], name: str, **labels: str) -> float:
    return all_samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_metrics_after_a_known_sequence(web: Any, web_rt: Runtime, clock: FakeClock) -> None:
    web_rt.channels["web"] = FlakyWeb()
    svc = web_rt.service
    by_web, _ = await svc.suspend(SuspendRequest("run-1", "pay", "Pay", policy="fast"))
    by_api, _ = await svc.suspend(SuspendRequest("run-2", "mail", "Mail"))
    timing_out, _ = await svc.suspend(SuspendRequest("run-3", "deploy", "Deploy", policy="fast"))
    await svc.suspend(SuspendRequest("run-4", "wait", "Still waiting"))
    await web_rt.outbox.drain()  # the first post fails with a 429 and is retried after 1s
    clock.advance(seconds=30)
    await web_rt.outbox.drain()
    await sign_in(web)
    token = csrf_of(await (await web.get(f"/approvals/{by_web.id}")).text())
    await web.post(f"/approvals/{by_web.id}/decision", data={"csrf": token, "outcome": "approve"})
    clock.advance(minutes=10)
    resp = await web.post(
        f"/v1/approvals/{by_api.id}/decision", json={"outcome": "reject", "comment": "no"}, headers=OPERATOR
    )
    assert resp.status == 200
    clock.advance(minutes=1)
    assert await svc.apply_due(timing_out.id, clock.now()) == "timed_out"
    await web_rt.outbox.drain()
    svc.observer.attempt("agent", "retry", 0.5)  # what the worker reports after each attempt
    svc.observer.attempt("agent", "succeeded", 1.5)
    await journal(web_rt.store, clock.now(), (("run-1", "fetch", 2, 3.0), ("run-2", "fetch", 1, 1.0)))

    resp = await web.get("/metrics")
    assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    m = samples(await resp.text())
    assert value(m, "hitl_pending_approvals") == 1
    assert value(m, "hitl_approvals", status="approved") == 1 and value(m, "hitl_approvals", status="timed_out") == 1
    assert value(m, "hitl_decisions_total", outcome="approve", channel="web", source="human") == 1
    assert value(m, "hitl_decisions_total", outcome="reject", channel="api", source="operator") == 1
    assert value(m, "hitl_decisions_total", outcome="reject", channel="none", source="policy") == 1
    assert value(m, "hitl_timeouts_total", outcome="reject") == 1
    # Decided after 30s (web), 10m30s (api, an operator) and 11m30s (policy).
    assert value(m, "hitl_time_to_decision_seconds_count", source="human") == 1
    assert value(m, "hitl_time_to_decision_seconds_sum", source="human") == 30
    assert value(m, "hitl_time_to_decision_seconds_sum", source="operator") == 630
    assert value(m, "hitl_time_to_decision_seconds_bucket", source="human", le="60.0") == 1
    assert value(m, "hitl_time_to_decision_seconds_bucket", source="operator", le="900.0") == 1
    assert value(m, "hitl_time_to_decision_seconds_bucket", source="policy", le="300.0") == 0
    assert value(m, "hitl_time_to_decision_seconds_bucket", source="policy", le="900.0") == 1
    assert value(m, "hitl_outbox_deliveries_total", channel="web", kind="post", result="retry") == 1
    assert value(m, "hitl_outbox_deliveries_total", channel="web", kind="post", result="ok") == 4
    assert value(m, "hitl_outbox_deliveries_total", channel="web", kind="sync", result="ok") == 3
    assert value(m, "hitl_outbox_retries_total", channel="web") == 1
    assert value(m, "hitl_worker_attempts_total", worker="agent", result="retry") == 1
    assert value(m, "hitl_worker_attempts_total", worker="agent", result="succeeded") == 1
    assert value(m, "hitl_worker_attempt_duration_seconds_sum", worker="agent") == 2.0
    assert value(m, "hitl_step_duration_seconds_count", step="fetch") == 2
    assert value(m, "hitl_step_duration_seconds_sum", step="fetch") == 4.0


async def test_escalation_counts_as_a_timeout_and_metrics_need_no_login(
    web: Any, web_rt: Runtime, clock: FakeClock
) -> None:
    policy = {"timeout": "1m", "on_timeout": "escalate", "escalate_to": ["web"], "after_escalation": "approve"}
    resp = await web.post(  # an operator: an agent's inline policy may not approve on its own
        "/v1/suspend", json={"run_id": "r", "step": "s", "title": "t", "policy": policy}, headers=OPERATOR
    )
    approval_id = (await resp.json())["id"]
    clock.advance(minutes=2)
    assert await web_rt.service.apply_due(approval_id, clock.now()) == "escalated"
    clock.advance(minutes=2)
    assert await web_rt.service.apply_due(approval_id, clock.now()) == "timed_out"
    m = samples(await (await web.get("/metrics")).text())
    assert value(m, "hitl_timeouts_total", outcome="escalate") == 1
    assert value(m, "hitl_timeouts_total", outcome="approve") == 1
    assert value(m, "hitl_decisions_total", outcome="approve", channel="none", source="policy") == 1
    assert value(m, "hitl_pending_approvals") == 0
