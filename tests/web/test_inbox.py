"""The inbox, the approval page, deciding through the form (and the card sync), the dashboard."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from gateway.core.models import DeliveryStatus, JobStatus, OutboxKind, Outcome
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.testing import FakeClock
from tests.helpers import table_counts
from tests.web.conftest import csrf_of, journal, sign_in


async def _suspend(rt: Runtime, title: str, **kw: Any) -> Any:
    approval, _ = await rt.service.suspend(
        SuspendRequest(kw.pop("run_id", "run-1"), kw.pop("step", title), title, **kw)
    )
    return approval


async def test_inbox_lists_pending_oldest_first_with_sla_and_filters(
    web: Any, web_rt: Runtime, clock: FakeClock
) -> None:
    await _suspend(web_rt, "Old payment", policy="fast", args={"amount": 1})
    clock.advance(minutes=3)
    await _suspend(web_rt, "New deploy", run_id="run-2", channels=("web",))
    decided = await _suspend(web_rt, "Done email", run_id="run-3")
    await web_rt.service.decide(decided.id, Outcome.APPROVE, "web:alice", channel="web")
    await sign_in(web)
    html = await (await web.get("/")).text()
    assert html.index("Old payment") < html.index("New deploy")
    assert "Done email" not in html
    assert "overdue by 2m" in html  # fast = 1m timeout, asked 3m ago
    assert "due in 30m" in html and "default: 30m, then reject" in html and "fast: 1m, then reject" in html
    assert '<label for="f-status">' in html
    run2 = await (await web.get("/?run=run-2")).text()
    assert "New deploy" in run2 and "Old payment" not in run2
    everything = await (await web.get("/?status=all")).text()
    assert "Done email" in everything
    assert "Nothing here." in await (await web.get("/?channel=telegram")).text()
    assert "New deploy" in await (await web.get("/?channel=web")).text()
    bad = await web.get("/?status=bogus")
    assert bad.status == 400 and "status: must be" in await bad.text()


async def test_approval_page_shows_args_timeline_cards(web: Any, web_rt: Runtime) -> None:
    approval = await _suspend(web_rt, "Pay ACME", summary="Invoice 7", args={"amount": 4200, "note": "<b>x</b>"})
    await web_rt.outbox.drain()
    await sign_in(web)
    html = await (await web.get(f"/approvals/{approval.id}")).text()
    assert "<p>Invoice 7</p>" in html and '<th scope="row"><code>amount</code></th>' in html
    assert '<span class="v">4200</span>' in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html  # escaped
    assert "suspended" in html and "card_posted" in html
    assert f"/approvals/{approval.id}</code>" in html  # the web card's ref
    assert 'value="approve"' in html and 'value="reject"' in html
    missing = await web.get("/approvals/nope")
    assert missing.status == 404 and "not found" in await missing.text()


async def test_deciding_through_the_form_syncs_the_cards(web: Any, web_rt: Runtime) -> None:
    approval = await _suspend(web_rt, "Pay ACME")
    await web_rt.outbox.drain()
    await sign_in(web)
    page = await web.get(f"/approvals/{approval.id}")
    resp = await web.post(
        f"/approvals/{approval.id}/decision",
        data={"csrf": csrf_of(await page.text()), "outcome": "approve", "comment": "ok by me"},
        allow_redirects=False,
    )
    assert resp.status == 303 and resp.headers["Location"] == "/"  # nothing else waits
    stored = await web_rt.service.get(approval.id)
    assert stored.status.value == "approved" and stored.decision is not None
    assert (stored.decision.decided_by, stored.decision.channel, stored.decision.comment) == (
        "web:alice",
        "web",
        "ok by me",
    )
    syncs = [o for o in await web_rt.store.list_outbox(approval.id) if o.kind is OutboxKind.SYNC]
    assert [(o.channel, o.status) for o in syncs] == [("web", DeliveryStatus.PENDING)]
    await web_rt.outbox.drain()
    assert "card_synced" in [e.kind for e in await web_rt.store.list_events(approval.id)]
    html = await (await web.get(f"/approvals/{approval.id}")).text()
    assert "Outcome: approved<" in html and "web:alice" in html and "ok by me" in html
    assert 'value="approve"' not in html  # no form once decided
    again = await web.post(
        f"/approvals/{approval.id}/decision", data={"csrf": csrf_of(html), "outcome": "reject", "comment": "no"}
    )
    assert again.status == 409 and "already approved by web:alice" in await again.text()


async def test_a_reason_to_reject_is_the_policys_call_as_on_every_path(web: Any, web_rt: Runtime) -> None:
    """`require_reason`: the web refuses a reject without a comment exactly when the API does."""
    approval = await _suspend(web_rt, "Pay ACME", policy="strict")
    await sign_in(web)
    page = await (await web.get(f"/approvals/{approval.id}")).text()
    assert "Comment (required to reject)" in page
    token = csrf_of(page)
    before = await table_counts(web_rt)
    url = f"/approvals/{approval.id}/decision"
    for data, msg in (
        ({"outcome": "reject"}, "policy &#39;strict&#39; requires a reason to reject"),
        ({"outcome": "maybe"}, "approve or reject"),
    ):
        resp = await web.post(url, data={"csrf": token, **data})
        assert resp.status == 400 and msg in await resp.text()
    assert await table_counts(web_rt) == before
    resp = await web.post(url, data={"csrf": token, "outcome": "reject", "comment": "too much"})
    assert resp.status == 200 and (await web_rt.service.get(approval.id)).status.value == "rejected"
    other = await _suspend(web_rt, "Pay Initech", run_id="run-2")  # the default policy: no reason needed
    assert "Comment (optional)" in await (await web.get(f"/approvals/{other.id}")).text()
    resp = await web.post(f"/approvals/{other.id}/decision", data={"csrf": token, "outcome": "reject"})
    assert resp.status == 200 and (await web_rt.service.get(other.id)).status.value == "rejected"
    assert "Outcome: rejected<" in await (await web.get(f"/approvals/{other.id}")).text()


async def test_a_refused_decision_keeps_the_form_and_what_was_typed(web: Any, web_rt: Runtime) -> None:
    """First hour #9: the error shows next to the form, on the approval page, and the typed text
    stays in the textarea (not a bare error page that drops it)."""
    approval = await _suspend(web_rt, "Pay ACME")
    await sign_in(web)
    token = csrf_of(await (await web.get(f"/approvals/{approval.id}")).text())
    url = f"/approvals/{approval.id}/decision"
    resp = await web.post(url, data={"csrf": token, "outcome": "maybe", "comment": "half <b>typed</b> thought"})
    html = await resp.text()
    assert resp.status == 400 and 'role="alert"' in html and "approve or reject" in html
    assert ">half &lt;b&gt;typed&lt;/b&gt; thought</textarea>" in html  # kept, escaped
    assert "Pay ACME" in html and 'value="approve"' in html  # the approval page, with its form
    await web_rt.service.decide(approval.id, Outcome.APPROVE, "web:bob", channel="web")
    resp = await web.post(url, data={"csrf": token, "outcome": "reject", "comment": "too late?"})
    html = await resp.text()
    assert resp.status == 409 and "already approved by web:bob" in html and "too late?" not in html  # no form


async def test_viewers_and_non_approvers_cannot_decide(web: Any, web_rt: Runtime) -> None:
    approval = await _suspend(web_rt, "Pay ACME")
    only_bob = await _suspend(web_rt, "Bob only", approvers=("web:bob",))
    await sign_in(web, "victor")
    html = await (await web.get(f"/approvals/{approval.id}")).text()
    assert 'value="approve"' not in html and "You can view this approval but not decide it (viewer)" in html
    before = await table_counts(web_rt)
    resp = await web.post(f"/approvals/{approval.id}/decision", data={"csrf": csrf_of(html), "outcome": "approve"})
    assert resp.status == 403 and "victor is a viewer" in await resp.text()
    await web.post("/logout", data={"csrf": csrf_of(html)})
    await sign_in(web, "alice")
    token = csrf_of(await (await web.get("/")).text())
    resp = await web.post(f"/approvals/{only_bob.id}/decision", data={"csrf": token, "outcome": "approve"})
    assert resp.status == 403 and "not an approver" in await resp.text()
    assert await table_counts(web_rt) == before


async def test_dashboard_views_and_retrying_a_failed_job(web: Any, web_rt: Runtime, clock: FakeClock) -> None:
    store, now = web_rt.store, clock.now()
    rows = (("run-1", "fetch", 3, 2.0), ("run-2", "fetch", 2, 4.0), ("run-1", "charge", 1, 9.0))
    await journal(store, now - timedelta(hours=1), rows)
    waiting = await _suspend(web_rt, "Pay ACME", run_id="run-1")
    job_approval = await _suspend(web_rt, "Deploy", run_id="run-9", worker="agent")
    clock.advance(minutes=10)
    await web_rt.service.decide(job_approval.id, Outcome.APPROVE, "web:alice", channel="web")
    [job] = [c.job for c in await store.claim_launches(clock.now(), "w1", timedelta(minutes=1), 10)]
    await store.finish_job(job.id, "w1", claim=job.claims, now=clock.now(), status=JobStatus.FAILED, error="exit 3")
    await sign_in(web)
    html = " ".join((await (await web.get("/dashboard")).text()).split())
    assert "Active runs by age" in html and "<code>run-1</code></a></td><td>1h 10m</td><td>waiting approval" in html
    assert re.search(r"<code>fetch</code></td><td>3</td><td>2</td>", html)  # retries 2+1 over 2 runs
    assert "<code>charge</code></td><td>9.00 s</td>" in html and "<code>fetch</code></td><td>3.00 s</td>" in html
    assert f'href="/approvals/{waiting.id}">Pay ACME' in html
    assert '<th scope="row">5-15 min</th><td><meter min="0" max="1" value="1"' in html
    assert "web <strong>1</strong>" in html and "human <strong>1</strong>" in html
    assert "exit 3" in html and f'action="/jobs/{job_approval.id}/retry"' in html
    resp = await web.post(f"/jobs/{job_approval.id}/retry", data={"csrf": csrf_of(html)}, allow_redirects=False)
    assert resp.status == 303 and resp.headers["Location"] == "/dashboard"
    requeued = await store.get_job(job_approval.id)
    assert requeued is not None and requeued.status is JobStatus.QUEUED and requeued.attempts == 0
    assert "job_requeued" in [e.kind for e in await store.list_events(job_approval.id)]
    again = await web.post(f"/jobs/{job_approval.id}/retry", data={"csrf": csrf_of(html)})
    assert again.status == 409


async def test_every_web_route_is_in_the_openapi_spec(web: Any) -> None:
    spec = await (await web.get("/openapi.json")).json()
    for route in web.app.router.routes():
        path = route.resource.canonical if route.resource else ""
        if route.method == "HEAD" or not path:
            continue
        assert route.method.lower() in spec["paths"].get(path, {}), f"{route.method} {path} missing"


async def test_the_approval_page_names_the_person(aiohttp_client: Any, settings_factory: Any, clock: FakeClock) -> None:
    """`[people]`: the page shows who decided as the person, with the identity that did it."""
    from gateway.http.app import create_app
    from tests.web.conftest import WEB

    settings = settings_factory(web=WEB, people={"Alice": {"web": "alice", "telegram": 111}})
    rt = Runtime(settings, clock=clock, owner="test")
    web = await aiohttp_client(create_app(settings, runtime=rt, background=False))
    approval = await _suspend(rt, "Pay ACME")
    await rt.service.decide(approval.id, Outcome.APPROVE, "web:alice", channel="web")
    await sign_in(web)
    html = await (await web.get(f"/approvals/{approval.id}")).text()
    assert "By <strong>Alice</strong> (web:alice)" in html
    assert "by web:alice (Alice)" in html  # the audit trail
