"""The web inbox: the decision form carries the round it was drawn for. A page opened before
another approver changed the args is refused when it approves (409, no vote), drawn anew with the
current args (what was typed in the arg fields is dropped: it was the old args; the comment is
kept); the new page approves. A page without the field (drawn before round tags) stands for the
original args. A reject is a veto on any round."""

from __future__ import annotations

import re
from typing import Any

import pytest

from gateway.core.models import Outcome, Status
from gateway.runtime import Runtime
from tests.web.conftest import csrf_of, sign_in
from tests.web.test_edit_form import ARGS, _suspend

pytestmark = pytest.mark.subprocess  # every test here starts a process

STALE_TEXT = "The arguments changed while this page was open: look at them again below. Nothing was recorded."


def _round(page: str) -> str:
    found = re.search(r'name="round" value="([0-9a-f]+)"', page)
    assert found, "no round in the form"
    return found.group(1)


def _form(page: str, **over: str) -> dict[str, str]:
    return {"csrf": csrf_of(page), "round": _round(page), "outcome": "approve", "comment": "checked", **over}


async def test_a_page_drawn_before_an_edit_is_refused_and_the_redrawn_page_approves(web: Any, web_rt: Runtime) -> None:
    approval = await _suspend(web_rt, policy={"quorum": 2})
    await sign_in(web)
    stale = await (await web.get(f"/approvals/{approval.id}")).text()
    assert 'name="arg.amount" value="4200"' in stale
    await web_rt.service.decide(approval.id, Outcome.APPROVE, "web:bob", channel="web", args={**ARGS, "amount": 3900})
    resp = await web.post(f"/approvals/{approval.id}/decision", data=_form(stale, **{"arg.amount": "4200"}))
    page = await resp.text()
    assert resp.status == 409 and STALE_TEXT in page and 'role="alert"' in page
    assert 'name="arg.amount" value="3900"' in page  # the current args, not the stale input
    assert ">checked</textarea>" in page  # the comment is kept
    current = await web_rt.service.get(approval.id)
    assert [v.approver for v in current.votes] == ["web:bob"] and current.proposal is not None
    assert current.proposal.args["amount"] == 3900  # not undone by the stale form's 4200
    assert (await web.post(f"/approvals/{approval.id}/decision", data=_form(page))).status == 200
    done = await web_rt.service.get(approval.id)
    assert done.status is Status.APPROVED and done.decision is not None and done.decision.args is not None
    assert done.decision.args["amount"] == 3900 and done.decision.decided_by == "web:alice"


async def test_a_page_without_a_round_means_the_original_args_and_a_reject_is_a_veto(web: Any, web_rt: Runtime) -> None:
    approval = await _suspend(web_rt, policy={"quorum": 2})
    await sign_in(web)
    page = await (await web.get(f"/approvals/{approval.id}")).text()
    await web_rt.service.decide(approval.id, Outcome.APPROVE, "web:bob", channel="web", args={**ARGS, "amount": 3900})
    old = {"csrf": csrf_of(page), "outcome": "approve"}  # a page drawn before round tags
    assert (await web.post(f"/approvals/{approval.id}/decision", data=old)).status == 409
    assert (await web_rt.service.get(approval.id)).approvals_count == 1
    veto = _form(page, outcome="reject")
    assert (await web.post(f"/approvals/{approval.id}/decision", data=veto)).status == 200
    assert (await web_rt.service.get(approval.id)).status is Status.REJECTED
