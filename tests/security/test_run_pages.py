"""The run page shows one agent's run: run ids are per agent, so another agent's run of the
same id (its approvals, steps, outputs) never shows on it; signed-out visitors get nothing;
the journal's raw step outputs are never shown; a hostile run id is text."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from gateway.core.models import JobStatus, Outcome, StepRecord, StepStatus
from gateway.core.principals import Principal
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.testing import FakeClock
from tests.web.conftest import sign_in, web, web_rt, web_settings  # noqa: F401 - the web inbox's fixtures

RUN = "inv-7"


async def _run_of(rt: Runtime, clock: FakeClock, agent: str, secret: str) -> Any:
    """Agent `agent`'s run RUN: an approval, a step whose output holds `secret`, a job output."""
    now = clock.now()
    step = StepRecord(RUN, f"fetch_{agent}", StepStatus.SUCCEEDED, {"token": secret}, 1, now, now)
    await rt.store.record_step(step, namespace=f"agent:{agent}")
    req = SuspendRequest(RUN, "pay", f"Pay for {agent}", args={"who": agent}, worker="agent")
    approval, _ = await rt.service.suspend(req, Principal("agent", agent))
    await rt.service.decide(approval.id, Outcome.APPROVE, "web:bob", channel="web")
    [job] = [c.job for c in await rt.store.claim_launches(clock.now(), "w1", timedelta(minutes=1), 10)]
    out = f"output of {agent}"
    await rt.store.finish_job(
        job.id, "w1", claim=job.claims, now=clock.now(), status=JobStatus.SUCCEEDED, output_tail=out
    )
    return approval


async def _text(client: Any, url: str) -> tuple[int, str]:
    resp = await client.get(url, allow_redirects=False)
    return resp.status, await resp.text()


async def test_another_agents_run_of_the_same_id_never_shows(web: Any, web_rt: Runtime, clock: FakeClock) -> None:  # noqa: F811
    mine = await _run_of(web_rt, clock, "a", "sk_live_AAAA")
    theirs = await _run_of(web_rt, clock, "b", "sk_live_BBBB")
    status, _ = await _text(web, f"/runs/{RUN}?agent=a")
    assert status == 303  # signed out: to the sign-in page, nothing of the run
    await sign_in(web, "victor")  # a viewer sees what the inbox shows, no more
    status, html = await _text(web, f"/runs/{RUN}?agent=a")
    assert status == 200 and "Pay for a" in html and "fetch_a" in html and "output of a" in html
    for leak in ("Pay for b", "fetch_b", "output of b", theirs.id, "sk_live"):
        assert leak not in html, leak
    status, html = await _text(web, f"/runs/{RUN}?agent=B")  # names are case-insensitive
    assert status == 200 and "Pay for b" in html and mine.id not in html and "fetch_a" not in html
    status, html = await _text(web, f"/runs/{RUN}")  # which agent's? a choice, with nothing of either run
    assert status == 200 and 'href="/runs/inv-7?agent=a"' in html and 'href="/runs/inv-7?agent=b"' in html
    for leak in ("Pay for", "fetch_", "output of", mine.id, theirs.id):
        assert leak not in html, leak
    for url in (f"/runs/{RUN}?agent=c", f"/runs/{RUN}?agent="):  # an agent without that run; no agent's
        status, html = await _text(web, url)
        assert status == 404 and "Pay for" not in html and "fetch_" not in html


async def test_a_hostile_run_id_is_text(web: Any, web_rt: Runtime) -> None:  # noqa: F811
    run = "<script>alert(1)</script>"
    approval, _ = await web_rt.service.suspend(SuspendRequest(run, "pay", "Pay"))
    await sign_in(web)
    page = await (await web.get(f"/approvals/{approval.id}")).text()
    assert 'href="/runs/%3Cscript%3Ealert%281%29%3C%2Fscript%3E?agent="' in page
    resp = await web.get("/runs/%3Cscript%3Ealert%281%29%3C%2Fscript%3E")
    html = await resp.text()
    assert resp.status == 200 and "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html
    assert resp.headers["Content-Security-Policy"].startswith("default-src 'none'; script-src 'self'")
