"""A link's use is recorded with what it does (an extension, a vote, a decision), in its transaction.

A confirm cut short before the extension's commit left the link unused (recorded first, the link
would be spent and the extension lost): confirming again extends. Once committed, the link
extends nothing more, though the policy would allow another extension.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from gateway.core.models import Status
from tests.email.conftest import ALICE, BOB, Mail
from tests.fakes.smtp import links_of, text_of
from tests.helpers import CommitDiesOnce, table_counts


@pytest.fixture
def db_url(store_url: str) -> str:
    return store_url  # SQLite and PostgreSQL: the mark commits in the backend's own transaction


async def test_an_email_extend_cut_short_before_its_commit_extends_once_when_confirmed_again(mail: Mail) -> None:
    approval_id = await mail.suspend(channels=[f"email:{ALICE}"], policy="roomy")
    await mail.rt.outbox.drain()
    before = await mail.rt.service.get(approval_id)
    assert before.deadline is not None
    card = text_of(mail.inbox.to(ALICE)[0])
    (line,) = [ln for ln in card.splitlines() if ln.startswith("Extend the deadline +1h: ")]
    url = line.split(": ", 1)[1]
    dies = CommitDiesOnce(mail.rt)

    assert (await mail.confirm(url)).status == 500
    assert dies.died and (await mail.rt.service.get(approval_id)).extensions == 0

    resp = await mail.confirm(url)  # the link was not used up by the confirm that died
    assert resp.status == 200 and "new deadline is" in await resp.text()
    after = await mail.rt.service.get(approval_id)
    assert after.extensions == 1 and after.deadline == before.deadline + timedelta(hours=1)

    counts = await table_counts(mail.rt)
    again = await mail.confirm(url)  # the policy allows 3: the link, once, is what stops it
    assert again.status == 409 and "already used" in await again.text()
    assert await table_counts(mail.rt) == counts
    assert (await mail.rt.service.get(approval_id)).extensions == 1


async def test_an_email_approve_cut_short_before_its_commit_decides_when_confirmed_again(mail: Mail) -> None:
    """The approve link's use commits with the decision: the confirm that died leaves it unused."""
    approval_id = await mail.suspend(channels=[f"email:{ALICE}"])
    await mail.rt.outbox.drain()
    url = links_of(mail.inbox.to(ALICE)[0])["approve"]
    dies = CommitDiesOnce(mail.rt)

    assert (await mail.confirm(url)).status == 500
    assert dies.died and (await mail.rt.service.get(approval_id)).status is Status.WAITING

    resp = await mail.confirm(url)
    assert resp.status == 200 and "Approved" in await resp.text()
    assert (await mail.rt.service.get(approval_id)).status is Status.APPROVED


async def test_an_email_vote_cut_short_before_its_commit_counts_once(mail: Mail) -> None:
    """A quorum's first vote by link: the vote that died is not counted, the second confirm is,
    and the link then counts nothing more."""
    approval_id = await mail.suspend(channels=[f"email:{ALICE}", f"email:{BOB}"], policy="pair")
    await mail.rt.outbox.drain()
    url = links_of(mail.inbox.to(ALICE)[0])["approve"]
    dies = CommitDiesOnce(mail.rt)

    assert (await mail.confirm(url)).status == 500
    assert dies.died and not (await mail.rt.service.get(approval_id)).votes

    assert (await mail.confirm(url)).status == 200
    voted = await mail.rt.service.get(approval_id)
    assert voted.status is Status.WAITING and [v.approver for v in voted.votes] == [f"email:{ALICE}"]

    counts = await table_counts(mail.rt)
    again = await mail.confirm(url)
    assert again.status == 409 and "already used" in await again.text()
    assert await table_counts(mail.rt) == counts
