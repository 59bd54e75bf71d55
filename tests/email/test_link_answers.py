"""An approve link's page says what its confirm did. A link whose use was recorded once (its first
vote, wiped since by an edit) stands for the current round again when the args came back to what
it was mailed for: the addressee is mailed it again (the same link), and confirming it votes. The
page must then say the vote was recorded, not "already used"."""

from __future__ import annotations

import pytest

from gateway.core import rounds
from gateway.core.models import Outcome, Status
from gateway.service.commands import CastVote
from tests.email.conftest import ALICE, BOB, Mail
from tests.email.test_edits import SCHEMA
from tests.fakes.smtp import links_of

pytestmark = pytest.mark.subprocess  # as the other e-mail round tests


async def test_an_email_link_that_votes_again_after_an_edit_back_says_so(mail: Mail) -> None:
    policy = {"args_schema": SCHEMA, "editable": ["amount"], "policy": "pair"}
    approval_id = await mail.suspend(channels=[f"email:{ALICE}", f"email:{BOB}", "web"], **policy)
    await mail.rt.outbox.drain()
    alice = links_of(mail.inbox.to(ALICE)[0])["approve"]
    assert (await mail.confirm(alice)).status == 200  # Alice's vote for amount 4200, the link used
    bob = links_of(mail.inbox.to(BOB)[0])["approve"]
    assert (await mail.confirm(bob, **{"arg.amount": "3900"})).status == 200  # a new round: Alice's vote wiped
    edited = await mail.rt.service.get(approval_id)
    back = CastVote(  # carol (web) changes it back: the round Alice's link was mailed for
        approval_id,
        Outcome.APPROVE,
        "web:carol",
        channel="web",
        args={**edited.current_args, "amount": 4200},
        seen=rounds.tag(mail.rt.signer, edited),
    )
    await mail.rt.service.decisions.cast(back)
    await mail.rt.outbox.drain()
    assert links_of(mail.inbox.to(ALICE)[-1])["approve"] == alice  # she is asked again, with that link

    resp = await mail.confirm(alice)
    done = await mail.rt.service.get(approval_id)
    assert done.status is Status.APPROVED and done.decision is not None  # her vote counted, with carol's
    html = await resp.text()
    assert resp.status == 200 and "already used" not in html, html  # before: 409, "This link was already used"
