"""The run page: a run's approvals, its journal steps with timings and attempts, the resume jobs
with their output tail, and a timeline; linked from every approval."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from gateway.core.events import EventKind
from gateway.core.models import JobStatus, NewEvent, Outcome, StepRecord, StepStatus
from gateway.core.principals import Principal
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.testing import FakeClock
from tests.web.conftest import sign_in

AGENT_A = Principal("agent", "a")


async def _suspend(rt: Runtime, run: str, step: str, title: str, by: Principal | None = None, **kw: Any) -> Any:
    approval, _ = await rt.service.suspend(SuspendRequest(run, step, title, **kw), by)
    return approval


async def test_a_run_page_shows_approvals_steps_jobs_and_a_timeline(
    web: Any, web_rt: Runtime, clock: FakeClock
) -> None:
    store, start = web_rt.store, clock.now()
    fetched = StepRecord(
        "inv-7", "fetch_invoice", StepStatus.SUCCEEDED, {"x": 1}, 3, start, start + timedelta(seconds=1.5)
    )
    await store.record_step(fetched, namespace="agent:a")
    clock.advance(seconds=2)
    pay = await _suspend(web_rt, "inv-7", "pay", "Pay ACME 4200", AGENT_A, worker="agent", args={"amount": 4200})
    clock.advance(minutes=3)
    await web_rt.service.decide(pay.id, Outcome.APPROVE, "web:bob", channel="web")
    [job] = [c.job for c in await store.claim_launches(clock.now(), "w1", timedelta(minutes=1), 10)]
    clock.advance(seconds=4)
    tail = "charging 4200...\ncharged <ok> txn=991\n"
    done = NewEvent(pay.id, EventKind.JOB_SUCCEEDED, clock.now(), "w1", data={"attempt": 1})
    await store.finish_job(
        job.id, "w1", claim=job.claims, now=clock.now(), status=JobStatus.SUCCEEDED, output_tail=tail, events=[done]
    )
    later = await _suspend(web_rt, "inv-7", "email", "Email the receipt", AGENT_A)
    await sign_in(web)

    page = await (await web.get(f"/approvals/{pay.id}")).text()
    assert 'href="/runs/inv-7?agent=a"' in page  # linked from the approval
    resp = await web.get("/runs/inv-7?agent=a")
    html = await resp.text()
    assert resp.status == 200 and "<h1>Run <code>inv-7</code></h1>" in html and "Agent <code>a</code>" in html
    assert html.index("Pay ACME 4200") < html.index("Email the receipt")  # oldest first
    assert f'<a href="/approvals/{pay.id}">' in html and f'<a href="/approvals/{later.id}">' in html
    step = re.search(r'<tr class="step">(.*?)</tr>', html, re.S)
    assert step is not None and "<code>fetch_invoice</code>" in step.group(1)
    assert '<td data-label="Status">succeeded</td><td data-label="Attempts">3</td>' in step.group(1)
    assert '<td data-label="Took">1.50 s</td>' in step.group(1)  # its timing
    assert "worker <code>agent</code>, <strong>succeeded</strong>, 1 attempt" in html
    assert "charged &lt;ok&gt; txn=991" in html  # the output tail, escaped
    timeline = html[html.index('id="run-timeline-h"') :]
    order = ["step fetch_invoice", "suspended", "approved", "job succeeded"]
    at = [timeline.index(f"<strong>{w}</strong>") for w in order]
    assert at == sorted(at) and ">+0s</time>" in timeline and ">+3m 6s</time> <strong>job succeeded" in timeline


async def test_a_run_page_without_agent_shows_the_only_run_of_that_id(web: Any, web_rt: Runtime) -> None:
    mine = await _suspend(web_rt, "solo", "pay", "Pay")
    await sign_in(web)
    html = await (await web.get("/runs/solo")).text()
    assert f'<a href="/approvals/{mine.id}">Pay</a>' in html
    missing = await web.get("/runs/nope")
    assert missing.status == 404 and "no run" in await missing.text()
    bad = await web.get("/runs/solo?agent=not%20a%20name")
    assert bad.status == 400 and "agent:" in await bad.text()
