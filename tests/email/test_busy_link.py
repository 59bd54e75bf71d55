"""An e-mail link whose confirm lost to contention (BUSY: "please press again") committed nothing,
and its page tells the addressee to confirm again. Confirming again must then decide: the link's
use commits with the vote, and a BUSY vote wrote none. A chat press is pressed again with a new
delivery id; a link is the same link, so a BUSY that spends it locks its addressee out of it."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.core.models import Status
from tests.email.conftest import ALICE, Mail
from tests.fakes.smtp import links_of


async def test_an_email_link_refused_as_busy_decides_when_confirmed_again(
    mail: Mail, monkeypatch: pytest.MonkeyPatch
) -> None:
    approval_id = await mail.suspend(channels=[f"email:{ALICE}"])
    await mail.rt.outbox.drain()
    url = links_of(mail.inbox.to(ALICE)[0])["approve"]
    committer = mail.rt.service.decisions.committer

    async def lost(*_: Any) -> bool:  # every compare-and-set lost to another writer
        return False

    monkeypatch.setattr(committer, "commit", lost)
    busy = await mail.confirm(url)
    assert busy.status == 503 and "please press again" in await busy.text()
    monkeypatch.undo()

    again = await mail.confirm(url)
    assert again.status == 200, await again.text()  # not 409, "This link was already used"
    assert (await mail.rt.service.get(approval_id)).status is Status.APPROVED
