"""The inbox's search, and deciding several approvals together from it (each its own decision
as the signed-in approver, the result shown per item). Who may decide what in a batch is
tests/security/test_batch.py."""

from __future__ import annotations

import re
from typing import Any

from gateway.core import rounds
from gateway.core.models import Outcome
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from tests.helpers import table_counts
from tests.web.conftest import csrf_of, sign_in

_PICK = re.compile(r'name="pick:([a-z0-9]+)" value="([^"]+)"')


async def _suspend(rt: Runtime, title: str, **kw: Any) -> str:
    req = SuspendRequest(kw.pop("run_id", "run-1"), kw.pop("step", title), title, **kw)
    return (await rt.service.suspend(req))[0].id


async def test_search_finds_title_summary_run_step_and_agent(web: Any, web_rt: Runtime) -> None:
    await _suspend(web_rt, "Pay ACME", summary="Invoice for **March**", run_id="billing-7", step="charge")
    await _suspend(web_rt, "Deploy api", run_id="ship-2", step="roll_out")
    await sign_in(web)

    async def titles(query: str) -> list[str]:
        page = await web.get("/", params={"q": query})
        assert page.status == 200
        return re.findall(r'<a href="/approvals/[a-z0-9]+">([^<]+)</a>', await page.text())

    assert await titles("acme") == ["Pay ACME"]
    assert await titles("march") == ["Pay ACME"]  # summary
    assert await titles("SHIP") == ["Deploy api"]  # run
    assert await titles("roll_out") == ["Deploy api"]  # step, `_` taken literally
    assert await titles("rollXout") == []
    assert await titles("%") == []
    assert sorted(await titles("")) == ["Deploy api", "Pay ACME"]
    html = await (await web.get("/", params={"q": "acme"})).text()
    assert 'name="q" type="search" value="acme"' in html
    too_long = await web.get("/", params={"q": "x" * 201})
    assert too_long.status == 400 and "at most 200 characters" in await too_long.text()


async def test_approve_several_together_shows_each_result(web: Any, web_rt: Runtime) -> None:
    ids = [await _suspend(web_rt, t) for t in ("Pay one", "Pay two", "Pay three")]
    strict = await _suspend(web_rt, "Strict one", policy="strict")
    await sign_in(web)
    html = await (await web.get("/")).text()
    picks = dict(_PICK.findall(html))
    assert set(picks) == {*ids, strict}
    assert 'data-action="approve"' in html and 'data-action="reject"' in html
    form = {"csrf": csrf_of(html), "outcome": "approve", "comment": "batch ok"}
    form |= {f"pick:{i}": picks[i] for i in ids[:2]}
    resp = await web.post("/", data=form)
    assert resp.status == 200
    page = await resp.text()
    assert "Approved: 2 of 2" in page
    for i in ids[:2]:
        stored = await web_rt.service.get(i)
        assert stored.decision is not None
        assert (stored.status.value, stored.decision.decided_by, stored.decision.channel) == (
            "approved",
            "web:alice",
            "web",
        )
        assert stored.decision.comment == "batch ok"
    assert (await web_rt.service.get(ids[2])).status.value == "waiting_approval"
    # the list below the results still offers the one left, and the strict one
    assert set(dict(_PICK.findall(page))) == {ids[2], strict}
    # a reject without a reason: refused for the strict one (require_reason), done for the other
    form = {
        "csrf": csrf_of(page),
        "outcome": "reject",
        f"pick:{ids[2]}": picks[ids[2]],
        f"pick:{strict}": picks[strict],
    }
    page = await (await web.post("/", data=form)).text()
    assert "Rejected: 1 of 2" in page
    assert re.search(
        r'class="error"><a href="/approvals/'
        + strict
        + r'">Strict one</a>: comment: policy &#39;strict&#39; requires a reason',
        page,
    ), page
    assert (await web_rt.service.get(strict)).status.value == "waiting_approval"
    assert (await web_rt.service.get(ids[2])).status.value == "rejected"


async def test_a_bad_batch_form_decides_nothing(web: Any, web_rt: Runtime) -> None:
    one = await _suspend(web_rt, "Pay one")
    await sign_in(web)
    html = await (await web.get("/")).text()
    tag = dict(_PICK.findall(html))[one]
    before = await table_counts(web_rt)
    token = csrf_of(html)
    cases = [
        ({"csrf": token, "outcome": "approve"}, 400, "Select at least one"),
        ({"csrf": token, "outcome": "maybe", f"pick:{one}": tag}, 400, "outcome: must be"),
        ({"csrf": token, "outcome": "approve:1h", f"pick:{one}": tag}, 400, "one at a time"),
        ({"csrf": token, "outcome": "approve", "comment": "x" * 2001, f"pick:{one}": tag}, 400, "at most 2000"),
        ({"outcome": "approve", f"pick:{one}": tag}, 403, "CSRF"),
        ({"csrf": token, "outcome": "approve", **{f"pick:{i:04d}": "0" for i in range(101)}}, 400, "At most 100"),
    ]
    for form, status, words in cases:
        resp = await web.post("/", data=form)
        assert resp.status == status and words in await resp.text(), (form.get("outcome"), status)
    assert await table_counts(web_rt) == before


async def test_a_viewer_sees_no_checkboxes_and_cannot_post_a_batch(web: Any, web_rt: Runtime) -> None:
    one = await _suspend(web_rt, "Pay one")
    await sign_in(web, "victor")
    html = await (await web.get("/")).text()
    assert "Pay one" in html and "pick:" not in html and 'data-action="approve"' not in html
    tag = rounds.tag(web_rt.signer, await web_rt.service.get(one))
    resp = await web.post("/", data={"csrf": csrf_of(html), "outcome": "approve", f"pick:{one}": tag})
    assert resp.status == 403
    assert (await web_rt.service.get(one)).status.value == "waiting_approval"


async def test_only_rows_the_person_may_decide_alone_have_a_checkbox(web: Any, web_rt: Runtime) -> None:
    one, two = await _suspend(web_rt, "Pay one"), await _suspend(web_rt, "Pay two")
    await _suspend(web_rt, "Her own", requested_by="web:alice")
    await _suspend(web_rt, "Bob's only", approvers=("web:bob",))
    await web_rt.service.decide(one, Outcome.APPROVE, "web:bob", channel="web")
    await sign_in(web)
    html = await (await web.get("/", params={"status": "all"})).text()
    assert "Her own" in html and "Bob&#39;s only" in html
    assert set(dict(_PICK.findall(html))) == {two}


async def test_a_batch_posted_from_a_search_shows_that_search_again(web: Any, web_rt: Runtime) -> None:
    one, two = await _suspend(web_rt, "Pay ACME"), await _suspend(web_rt, "Deploy api")
    await sign_in(web)
    html = await (await web.get("/", params={"q": "acme"})).text()
    assert 'action="/?q=acme"' in html
    picks = dict(_PICK.findall(html))
    assert set(picks) == {one}
    form = {"csrf": csrf_of(html), "outcome": "approve", f"pick:{one}": picks[one]}
    page = await (await web.post("/?q=acme", data=form)).text()
    assert "Approved: 1 of 1" in page and 'value="acme"' in page
    assert "Deploy api" not in page  # the list below is the search's
    assert (await web_rt.service.get(two)).status.value == "waiting_approval"


async def test_a_vote_short_of_quorum_is_shown_as_waiting(web: Any, web_rt: Runtime) -> None:
    pair = await _suspend(web_rt, "Pay pair", policy={"quorum": 2, "timeout": "1h"})
    await sign_in(web)
    html = await (await web.get("/")).text()
    form = {"csrf": csrf_of(html), "outcome": "approve", f"pick:{pair}": dict(_PICK.findall(html))[pair]}
    page = await (await web.post("/", data=form)).text()
    assert "Approved: 1 of 1" in page and "your vote is recorded; it waits for more approvals" in page
    stored = await web_rt.service.get(pair)
    assert stored.status.value == "waiting_approval" and [v.approver for v in stored.votes] == ["web:alice"]
    # a second approve by her counts once, as on the approval page
    again = await (await web.post("/", data={**form, "csrf": csrf_of(page)})).text()
    assert "Approved: 1 of 1" in again
    assert len((await web_rt.service.get(pair)).votes) == 1
