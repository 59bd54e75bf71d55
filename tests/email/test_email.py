"""The e-mail channel end to end, against a real SMTP server: the mail, its links, the
confirmation page (a GET never decides), the outcome mail, and SMTP errors."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlsplit

from adapters.email import links
from gateway.core.models import DeliveryStatus, Outcome, Status
from tests.conftest import AUTH
from tests.email.conftest import ALICE, BOB, MALLORY, SENDER, Mail
from tests.fakes.smtp import links_of, text_of
from tests.helpers import table_counts


async def test_suspend_mail_get_confirm_and_every_card_synced(mail: Mail) -> None:
    approval_id = await mail.suspend(channels=[f"email:{ALICE.upper()}", "web"])
    approval = await mail.rt.service.get(approval_id)
    assert approval.channels == (f"email:{ALICE}", "web")  # canonical address
    await mail.rt.outbox.drain()

    (card,) = mail.inbox.to(ALICE)
    assert card["From"] == SENDER and card["Subject"] == "Approval needed: Charge ACME $42"
    assert card["Message-ID"].startswith(f"<hitl.{approval_id}.card.") and card["Auto-Submitted"] == "auto-generated"
    assert card.get_body(preferencelist=("html",)) is not None  # multipart: text and HTML
    text = text_of(card)
    assert "Monthly invoice" in text and "amount: 4200" in text and "Deadline: 2030-01-01 12:30 UTC" in text
    links = links_of(card)
    assert set(links) == {"approve", "reject"}

    before = await table_counts(mail.rt)
    for _ in range(3):  # a mail scanner prefetching the links decides nothing
        for url in links.values():
            page = await mail.get(url)
            assert page.status == 200 and "<form method='post'" in await page.text()
            assert (await mail.client.head(urlsplit(url).path)).status == 200
    assert (await mail.rt.service.get(approval_id)).status is Status.WAITING
    assert await table_counts(mail.rt) == before

    resp = await mail.confirm(links["approve"])
    assert resp.status == 200 and "Approved" in await resp.text()
    approval = await mail.rt.service.get(approval_id)
    assert approval.status is Status.APPROVED
    assert approval.decision is not None and approval.decision.decided_by == f"email:{ALICE}"
    assert approval.decision.channel == f"email:{ALICE}"

    await mail.rt.outbox.drain()
    cards = {c.channel: c for c in await mail.rt.store.list_cards(approval_id)}
    assert set(cards) == {f"email:{ALICE}", "web"} and all(c.status is DeliveryStatus.DONE for c in cards.values())
    synced = {e.channel for e in await mail.rt.store.list_events(approval_id) if e.kind == "card_synced"}
    assert synced == {f"email:{ALICE}", "web"}  # every card of the approval
    outcome = mail.inbox.to(ALICE)[-1]
    assert outcome["Subject"] == "Approved: Charge ACME $42" and outcome["In-Reply-To"] == card["Message-ID"]
    assert f"Approved by email:{ALICE}" in text_of(outcome)
    page = await mail.get(links["reject"])  # after the decision: nothing to confirm
    assert page.status == 200 and "Already approved by" in await page.text() and "<form" not in await page.text()


async def test_a_link_works_once_and_only_from_its_page(mail: Mail) -> None:
    approval_id = await mail.suspend(policy="pair", channels=[f"email:{ALICE}"])
    await mail.rt.outbox.drain()
    approve = links_of(mail.inbox.to(ALICE)[0])["approve"]
    path = urlsplit(approve).path
    # a POST that did not come from the page (no cookie, or a CSRF token made up) decides nothing
    assert (await mail.client.post(path, data={"csrf": "0" * 32})).status == 403
    assert (await mail.rt.service.get(approval_id)).votes == ()
    assert (await mail.confirm(approve)).status == 200
    assert (await mail.rt.service.get(approval_id)).approvals_count == 1
    again = await mail.confirm(approve)
    assert again.status == 409 and "already used" in await again.text()
    assert (await mail.rt.service.get(approval_id)).approvals_count == 1


async def test_a_link_is_bound_to_its_addressee_and_cannot_be_edited(mail: Mail) -> None:
    approval_id = await mail.suspend(channels=[f"email:{MALLORY}"])  # mallory is not an approver
    await mail.rt.outbox.drain()
    assert "approve" not in links_of(mail.inbox.to(MALLORY)[0])  # her mail is for information only
    # a link made for her anyway (as if the gateway had mailed one) is refused
    approval = await mail.rt.service.get(approval_id)
    made = links.token(mail.rt.signer, approval, MALLORY, Outcome.APPROVE, timedelta(days=7))
    approve = links.url(mail.rt.settings.server.public_url, made)
    resp = await mail.confirm(approve)
    assert resp.status == 403 and "Not authorised" in await resp.text()
    assert (await mail.rt.service.get(approval_id)).status is Status.WAITING
    denied = [e for e in await mail.rt.store.list_events(approval_id) if e.kind == "denied"]
    assert [e.actor for e in denied] == [f"email:{MALLORY}"]
    token = urlsplit(approve).path.rsplit("/", 1)[1]
    for forged in (token[:-2] + "xx", token.replace(".", "", 1), "nope"):
        assert (await mail.client.get(f"/email/links/{forged}")).status == 401
    mail.clock.advance(days=8)  # past the link's life (7 days, the deadline being earlier)
    assert (await mail.get(approve)).status == 410


async def test_reject_with_a_reason_from_the_page(mail: Mail) -> None:
    approval_id = await mail.suspend(channels=[f"email:{BOB}"])
    await mail.rt.outbox.drain()
    reject = links_of(mail.inbox.to(BOB)[0])["reject"]
    resp = await mail.confirm(reject, reason="Wrong <amount> & payee")
    assert resp.status == 200 and "Rejected" in await resp.text()
    decision = (await mail.rt.service.get(approval_id)).decision
    assert decision is not None and decision.comment == "Wrong <amount> & payee"
    await mail.rt.outbox.drain()
    outcome = mail.inbox.to(BOB)[-1]
    assert outcome["Subject"].startswith("Rejected: ") and "Comment: Wrong <amount> & payee" in text_of(outcome)
    html = outcome.get_body(preferencelist=("html",))
    assert html is not None and "Wrong &lt;amount&gt; &amp; payee" in str(html.get_content())  # type: ignore[attr-defined]


async def test_a_421_is_retried_and_the_retry_is_the_same_mail(mail: Mail) -> None:
    mail.inbox.refuse = ["421 4.3.2 try again later"]
    approval_id = await mail.suspend(channels=[f"email:{ALICE}"])
    await mail.rt.outbox.drain()
    assert mail.inbox.mails == []
    (row,) = await mail.rt.store.list_outbox(approval_id)
    assert row.status is DeliveryStatus.PENDING and row.last_error is not None and "421" in row.last_error
    mail.clock.advance(60)
    await mail.rt.outbox.drain()
    (card,) = mail.inbox.to(ALICE)
    stored = await mail.rt.store.get_card(approval_id, f"email:{ALICE}")
    assert stored is not None and stored.status is DeliveryStatus.DONE and stored.ref == card["Message-ID"]
    kinds = [e.kind for e in await mail.rt.store.list_events(approval_id)]
    assert kinds.count("delivery_retry") == 1 and kinds.count("card_posted") == 1


async def test_a_550_fails_the_card_for_good(mail: Mail) -> None:
    mail.inbox.refuse = ["550 5.1.1 no such user"]
    approval_id = await mail.suspend(channels=[f"email:{ALICE}"])
    await mail.rt.outbox.drain()
    card = await mail.rt.store.get_card(approval_id, f"email:{ALICE}")
    assert card is not None and card.status is DeliveryStatus.FAILED and card.error is not None and "550" in card.error
    mail.clock.advance(3600)
    assert await mail.rt.outbox.drain() == 0  # terminal: never retried
    assert mail.inbox.rcpts == 1 and mail.inbox.mails == []
    view = await (await mail.client.get(f"/v1/approvals/{approval_id}", headers=AUTH)).json()
    assert "delivery_failed" in [
        e["kind"]
        for e in (await (await mail.client.get(f"/v1/approvals/{approval_id}/events", headers=AUTH)).json())["items"]
    ]
    assert view["cards"][0]["status"] == "failed"


async def test_a_reminder_threads_under_the_card_and_headers_cannot_be_injected(mail: Mail) -> None:
    approval_id = await mail.suspend(channels=[f"email:{ALICE}"], policy="nudge", title="Pay\r\nBcc: everyone")
    await mail.rt.outbox.drain()
    mail.clock.advance(minutes=20)
    assert await mail.rt.service.apply_due(approval_id, mail.clock.now()) == "reminded"
    await mail.rt.outbox.drain()
    card, reminder = mail.inbox.to(ALICE)
    assert card["Subject"] == "Approval needed: Pay Bcc: everyone" and card["Bcc"] is None
    assert reminder["In-Reply-To"] == card["Message-ID"] and reminder["Subject"].startswith("Reminder: ")
    assert set(links_of(reminder)) == {"approve", "reject"}
