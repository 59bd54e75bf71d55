"""The approval page in the order a person decides: the title, the summary as safe Markdown,
the args as they stand now (with the edit beside them), the form, then the history; one word
for the outcome; and after a decision, the next approval waiting."""

from __future__ import annotations

import re
from typing import Any

from gateway.core.models import Outcome
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.testing import FakeClock
from tests.web.conftest import csrf_of, sign_in


async def _suspend(rt: Runtime, title: str, **kw: Any) -> Any:
    run, step = kw.pop("run_id", "run-1"), kw.pop("step", title)
    approval, _ = await rt.service.suspend(SuspendRequest(run, step, title, **kw))
    return approval


async def _page(web: Any, approval_id: str) -> str:
    resp = await web.get(f"/approvals/{approval_id}")
    assert resp.status == 200
    return await resp.text()


async def test_the_page_reads_title_summary_args_form_then_history(web: Any, web_rt: Runtime) -> None:
    approval = await _suspend(web_rt, "Pay ACME", summary="Invoice **7**", args={"amount": 4200, "memo": "May"})
    await sign_in(web)
    html = await _page(web, approval.id)
    marks = ["<h1", 'id="summary-h"', 'id="args-h"', 'id="decide-h"', 'id="events-h"', 'id="cards-h"']
    at = [html.index(m) for m in marks]
    assert at == sorted(at), dict(zip(marks, at, strict=True))
    assert '<button type="submit" name="outcome" value="approve" class="approve" data-action="approve">' in html
    assert '<button type="submit" name="outcome" value="reject" class="reject" data-action="reject">' in html
    assert '<th scope="row"><code>amount</code></th>' in html and '<span class="v">4200</span>' in html
    assert '<span class="v">May</span>' in html  # a string as it reads, not as JSON
    assert f'href="/runs/{approval.run_id}?agent="' in html  # no agent's run of that id


async def test_the_summary_is_markdown_and_nothing_runs(web: Any, web_rt: Runtime) -> None:
    summary = (
        "## Why\n**Refund** the *double* charge, see [the ticket](https://tickets.test/7).\n\n"
        "- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        '<script>alert(1)</script> <img src=x onerror="alert(2)"> [click](javascript:alert(3))\n\n'
        "![pixel](https://tracker.test/p.png) `code`"
    )
    approval = await _suspend(web_rt, "Refund", summary=summary)
    await sign_in(web)
    html = await _page(web, approval.id)
    body = html[html.index('<div class="summary">') : html.index('id="args-h"')]
    assert "<h2>Why</h2>" in body and "<strong>Refund</strong>" in body and "<em>double</em>" in body
    assert '<a href="https://tickets.test/7" rel="noopener noreferrer nofollow">the ticket</a>' in body
    assert "<li>one</li>" in body and "<td>1</td>" in body and "<code>code</code>" in body
    assert "&lt;script&gt;" in body and "<script" not in body and "<img" not in body
    assert "javascript:" not in body.replace("[click](javascript:alert(3))", "")  # no link made of it
    assert "tracker.test" not in body  # no image: the CSP's img-src 'self' is not the only guard
    assert "&lt;img src=x" in body  # shown as the text it is


async def test_after_an_edit_the_title_and_args_show_the_value_that_runs(web: Any, web_rt: Runtime) -> None:
    """Approved with changes 4200 → 3900: the title and the Arguments say 3900, with 4200 struck
    beside it, not 4200 still."""
    args = {"amount": 4200, "currency": "EUR", "memo": "May"}
    approval = await _suspend(web_rt, "Pay 4200 EUR to ACME", args=args, editable=["amount", "memo"])
    await web_rt.service.decide(
        approval.id, Outcome.APPROVE, "web:bob", channel="web", args={**args, "amount": 3900, "memo": "June"}
    )
    await sign_in(web)
    html = await _page(web, approval.id)
    h1 = re.search(r"<h1[^>]*>(.*?)</h1>", html, re.S)
    assert h1 is not None
    assert h1.group(1) == 'Pay <del class="was">4200</del> <ins class="now">3900</ins> EUR to ACME'
    assert "<title>Pay 3900 EUR to ACME · hitl-gateway</title>" in html
    args_html = html[html.index('id="args-h"') : html.index('id="events-h"')]
    assert "Arguments <span" in args_html and "(approved with changes)" in args_html
    row = re.search(r'<tr class="arg-changed">\s*<th scope="row"><code>amount</code></th>(.*?)</tr>', args_html, re.S)
    assert row is not None and '<span class="v">3900</span>' in row.group(1) and "<del>4200</del>" in row.group(1)
    assert '<span class="v">4200</span>' not in args_html
    assert "<del>May</del>" in args_html and '<span class="v">June</span>' in args_html
    assert "Outcome: approved<" in html and "(approve)" not in html


async def test_the_outcome_is_said_once(web: Any, web_rt: Runtime, clock: FakeClock) -> None:
    rejected = await _suspend(web_rt, "No", run_id="r1")
    await web_rt.service.decide(rejected.id, Outcome.REJECT, "web:bob", channel="web")
    timing_out = await _suspend(web_rt, "Late", run_id="r2", policy="fast")
    clock.advance(minutes=2)
    assert await web_rt.service.apply_due(timing_out.id, clock.now()) == "timed_out"
    await sign_in(web)
    rejected_html = await _page(web, rejected.id)
    assert '<h2 id="outcome-h">Outcome: rejected</h2>' in rejected_html and "(reject)" not in rejected_html
    assert '<h2 id="outcome-h">Outcome: timed out (rejected)</h2>' in await _page(web, timing_out.id)


async def test_a_decision_goes_on_to_the_next_approval_waiting(web: Any, web_rt: Runtime, clock: FakeClock) -> None:
    first = await _suspend(web_rt, "First", run_id="r1")
    clock.advance(seconds=5)
    second = await _suspend(web_rt, "Second", run_id="r2")
    clock.advance(seconds=2)
    await _suspend(web_rt, "Bob's only", run_id="r4", approvers=("web:bob",))  # not alice's to decide
    voted = await _suspend(web_rt, "Two votes", run_id="r5", policy={"quorum": 2})
    await web_rt.service.decide(voted.id, Outcome.APPROVE, "web:alice", channel="web")  # her vote is in
    clock.advance(seconds=3)
    third = await _suspend(web_rt, "Third", run_id="r3")
    await sign_in(web)
    token = csrf_of(await _page(web, second.id))

    async def decide(approval_id: str, outcome: str) -> str:
        url = f"/approvals/{approval_id}/decision"
        resp = await web.post(url, data={"csrf": token, "outcome": outcome}, allow_redirects=False)
        assert resp.status == 303
        return str(resp.headers["Location"])

    assert await decide(second.id, "approve") == f"/approvals/{third.id}?after={second.id}"  # the next in line
    html = await _page(web, f"{third.id}?after={second.id}")
    assert 'role="status">Decided: <a href="/approvals/' in html and "Second</a> (approved)" in html
    assert await decide(third.id, "reject") == f"/approvals/{first.id}?after={third.id}"  # none later: the oldest
    assert await decide(first.id, "approve") == "/"  # none left: the inbox
    assert (await web_rt.service.get(first.id)).status.value == "approved"


async def test_the_page_links_the_waiting_approvals_before_and_after_it(
    web: Any, web_rt: Runtime, clock: FakeClock
) -> None:
    """`rel="prev"` and `rel="next"`: the neighbours in the inbox's order, which `k` and `j`
    follow on this page (static/keys.js)."""
    first = await _suspend(web_rt, "First", run_id="r1")
    clock.advance(seconds=1)
    second = await _suspend(web_rt, "Second", run_id="r2")
    clock.advance(seconds=1)
    decided = await _suspend(web_rt, "Decided", run_id="r3")
    await web_rt.service.decide(decided.id, Outcome.APPROVE, "web:alice", channel="web")
    clock.advance(seconds=1)
    third = await _suspend(web_rt, "Third", run_id="r4")
    await sign_in(web)
    html = await _page(web, second.id)
    assert f'<a rel="prev" href="/approvals/{first.id}">' in html
    assert f'<a rel="next" href="/approvals/{third.id}">' in html  # the decided one is not in line
    html = await _page(web, first.id)
    assert 'rel="prev"' not in html and f'<a rel="next" href="/approvals/{second.id}">' in html
