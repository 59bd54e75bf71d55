"""E-mail: Approve links are bound to the round their mail was sent for. After an approver changed
the args, an Approve link from an earlier mail is refused (409, no vote), the addressee is mailed
the current args with fresh links, and those approve; a Reject link is a veto on any round."""

from __future__ import annotations

from datetime import timedelta

import pytest

from adapters.email import links as email_links
from gateway.core.events import EventKind
from gateway.core.models import Outcome, Status
from tests.email.conftest import ALICE, BOB, Mail
from tests.email.test_edits import SCHEMA
from tests.fakes.smtp import links_of, text_of

pytestmark = pytest.mark.subprocess  # every test here starts a process

EDITABLE = {"args_schema": SCHEMA, "editable": ["amount"], "policy": "pair"}
BOTH = [f"email:{ALICE}", f"email:{BOB}"]


async def test_an_approve_link_mailed_before_an_edit_is_refused_and_the_fresh_mail_approves(mail: Mail) -> None:
    approval_id = await mail.suspend(channels=BOTH, **EDITABLE)
    await mail.rt.outbox.drain()
    alice = links_of(mail.inbox.to(ALICE)[0])
    resp = await mail.confirm(alice["approve"], **{"arg.amount": "3900"})
    assert resp.status == 200
    await mail.rt.outbox.drain()
    sent = len(mail.inbox.to(BOB))
    stale = links_of(mail.inbox.to(BOB)[0])["approve"]
    resp = await mail.confirm(stale)
    html = await resp.text()
    assert resp.status == 409 and "The arguments changed: look at the updated card" in html
    assert "A mail with the current ones is on its way" in html
    approval = await mail.rt.service.get(approval_id)
    assert approval.status is Status.WAITING and [v.approver for v in approval.votes] == [f"email:{ALICE}"]
    events = await mail.rt.store.list_events(approval_id)
    assert not [e for e in events if e.actor == f"email:{BOB}" and e.kind in (EventKind.VOTE, EventKind.APPROVED)]
    await mail.rt.outbox.drain()
    assert len(mail.inbox.to(BOB)) == sent + 1
    fresh_mail = mail.inbox.to(BOB)[-1]
    assert "amount 4200 → 3900" in text_of(fresh_mail)
    fresh = links_of(fresh_mail)["approve"]
    assert fresh != stale
    resp = await mail.confirm(fresh)
    assert resp.status == 200 and "Approved" in await resp.text()
    done = await mail.rt.service.get(approval_id)
    assert done.status is Status.APPROVED and done.decision is not None and done.decision.args is not None
    assert done.decision.args["amount"] == 3900


async def test_a_link_mailed_before_round_tags_means_the_original_args_and_a_reject_is_a_veto(mail: Mail) -> None:
    approval_id = await mail.suspend(channels=BOTH, **EDITABLE)
    await mail.rt.outbox.drain()
    approval = await mail.rt.service.get(approval_id)
    age = timedelta(days=7)  # the default link_max_age
    old = email_links.token(mail.rt.signer, approval, BOB, Outcome.APPROVE, age)  # no round in it
    assert email_links.read(mail.rt.signer, old, mail.clock.now()).seen is None
    alice = links_of(mail.inbox.to(ALICE)[0])
    assert (await mail.confirm(alice["approve"], **{"arg.amount": "3900"})).status == 200
    resp = await mail.confirm(f"http://x{email_links.PATH}{old}")
    assert resp.status == 409 and (await mail.rt.service.get(approval_id)).approvals_count == 1
    reject = links_of(mail.inbox.to(BOB)[0])["reject"]  # mailed for round 0
    assert (await mail.confirm(reject)).status == 200
    assert (await mail.rt.service.get(approval_id)).status is Status.REJECTED
