"""E-mail: the Approve link's page offers the edit form; a refused edit or a missing required
reason shows the error on the page and does not use the link up; the mails show the change."""

from __future__ import annotations

import pytest

from gateway.core.models import Status
from tests.email.conftest import ALICE, Mail
from tests.fakes.smtp import links_of, text_of
from tests.helpers import table_counts

SCHEMA = {"type": "object", "properties": {"amount": {"type": "integer", "minimum": 1, "maximum": 5000}}}


@pytest.mark.subprocess
async def test_the_link_page_edits_and_approves(mail: Mail) -> None:
    approval_id = await mail.suspend(channels=[f"email:{ALICE}"], args_schema=SCHEMA, editable=["amount"])
    await mail.rt.outbox.drain()
    links = links_of(mail.inbox.to(ALICE)[0])
    page = await (await mail.get(links["approve"])).text()
    assert 'name="arg.amount" value="4200"' in page
    assert "arg.amount" not in await (await mail.get(links["reject"])).text()
    before = await table_counts(mail.rt)
    resp = await mail.confirm(links["approve"], **{"arg.amount": "9000"})
    html = await resp.text()
    assert resp.status == 400 and "args.amount: 9000 is greater than the maximum of 5000" in html
    assert 'aria-invalid="true" value="9000"' in html  # kept and marked
    assert await table_counts(mail.rt) == before  # and the link still works
    resp = await mail.confirm(links["approve"], **{"arg.amount": "3900"})
    assert resp.status == 200 and "Approved" in await resp.text()
    approval = await mail.rt.service.get(approval_id)
    assert approval.status is Status.APPROVED and approval.decision is not None
    assert approval.decision.args == {"amount": 3900, "currency": "USD"}
    await mail.rt.outbox.drain()
    assert f"Approved with changes by email:{ALICE}: amount 4200 → 3900" in text_of(mail.inbox.to(ALICE)[-1])


async def test_a_required_reason_is_asked_on_the_reject_page(mail: Mail) -> None:
    approval_id = await mail.suspend(channels=[f"email:{ALICE}"], policy="strict")
    await mail.rt.outbox.drain()
    reject = links_of(mail.inbox.to(ALICE)[0])["reject"]
    assert "Why reject? (required)" in await (await mail.get(reject)).text()
    resp = await mail.confirm(reject)
    assert resp.status == 400 and "policy &#x27;strict&#x27; requires a reason to reject" in await resp.text()
    assert (await mail.rt.service.get(approval_id)).status is Status.WAITING
    resp = await mail.confirm(reject, reason="wrong customer")
    assert resp.status == 200
    approval = await mail.rt.service.get(approval_id)
    assert approval.status is Status.REJECTED and approval.decision is not None
    assert approval.decision.comment == "wrong customer"


async def test_an_extend_link_moves_the_deadline_once(mail: Mail) -> None:
    approval_id = await mail.suspend(channels=[f"email:{ALICE}"], policy="stretch")
    await mail.rt.outbox.drain()
    card = text_of(mail.inbox.to(ALICE)[0])
    (line,) = [ln for ln in card.splitlines() if ln.startswith("Extend the deadline +1h: ")]
    url = line.split(": ", 1)[1]
    page = await (await mail.get(url)).text()
    assert "Extend the deadline by 1h?" in page and "2030-01-01 13:00 UTC" in page
    assert (await mail.rt.service.get(approval_id)).extensions == 0  # a GET changes nothing
    resp = await mail.confirm(url)
    assert resp.status == 200 and "new deadline is 2030-01-01 14:00" in await resp.text()
    approval = await mail.rt.service.get(approval_id)
    assert approval.extensions == 1 and approval.status is Status.WAITING
    again = await mail.confirm(url)
    assert again.status == 409 and "already used" in await again.text()
