"""A push's Approve and Reject links are one-time and bound to the person they were pushed to.

In-process, against the local push service (tests/fakes/push_service.py): the links are taken
from the payload it decrypted, as a phone would get them.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from gateway.core import rounds
from gateway.core import webpush as links
from gateway.core.models import Outcome, Status
from gateway.core.webpush import PushSubscription
from tests.web.conftest import csrf_of
from tests.webpush.support import PUBLIC, Rig, action, follow


async def _pushed(rig: Rig, name: str = "alice", **suspend: Any) -> Any:
    phone, resp = await rig.subscribe(await rig.client(name))
    assert resp.status == 201
    approval = await rig.suspend(**suspend)
    await rig.rt.outbox.drain()
    assert len(phone.received) == 1
    return phone, approval


async def test_a_link_decides_once_and_its_other_action_is_used_up_with_it(rig: Rig) -> None:
    phone, approval = await _pushed(rig)
    approve, reject = action(phone, "approve"), action(phone, "reject")
    opened = []  # three browsers open the push's pages before anyone confirms
    for link in (approve, approve, reject):
        client = await rig.client()
        opened.append((client, link, csrf_of(await (await client.get(link)).text())))
    statuses = [(await c.post(link, data={"csrf": csrf})).status for c, link, csrf in opened]
    assert statuses == [200, 409, 409]  # the replay, and the same push's other action, are refused
    page = await (await rig.client()).get(approve)
    assert "already" in (await page.text()).lower() and 'name="csrf"' not in await page.text()
    decided = await rig.rt.service.get(approval.id)
    assert decided.status is Status.APPROVED and len(decided.votes) == 1


async def test_on_a_quorum_the_other_action_of_a_used_push_is_refused(rig: Rig) -> None:
    """With two approvals needed, alice's Approve is a vote and the approval stays open: her
    push's Reject must not let her take it back or vote twice."""
    phone, approval = await _pushed(rig, policy="pair")
    assert (await follow(await rig.client(), action(phone, "approve")))[0] == 200
    status, page = await follow(await rig.client(), action(phone, "reject"))
    assert status == 409 and "already used" in page
    after = await rig.rt.service.get(approval.id)
    assert after.status is Status.WAITING and [v.outcome.value for v in after.votes] == ["approve"]


async def test_a_get_never_uses_the_link(rig: Rig) -> None:
    phone, approval = await _pushed(rig)
    client = await rig.client()
    for _ in range(3):  # prefetches, link previews, a reload
        assert (await client.get(action(phone, "approve"))).status == 200
    assert (await rig.rt.service.get(approval.id)).status is Status.WAITING
    assert (await follow(client, action(phone, "approve")))[0] == 200


async def test_someone_else_signed_in_cannot_use_the_link(rig: Rig) -> None:
    phone, approval = await _pushed(rig)
    bob = await rig.client("bob")  # an approver of this approval too, but not the link's person
    page = await bob.get(action(phone, "approve"))
    assert page.status == 403 and "sent to alice" in await page.text()
    resp = await bob.post(action(phone, "approve"), data={"csrf": "x"})
    assert resp.status == 403
    assert (await rig.rt.service.get(approval.id)).status is Status.WAITING
    assert (await follow(await rig.client(), action(phone, "approve")))[0] == 200  # still alice's to use


async def test_an_edited_link_is_refused(rig: Rig) -> None:
    phone, approval = await _pushed(rig)
    link = action(phone, "approve")
    body, _, mac = link.rpartition(".")
    forged = f"{body}.{'A' if mac[0] != 'A' else 'B'}{mac[1:]}"
    client = await rig.client()
    assert (await client.get(forged)).status == 401
    assert (await client.get(action(phone, "reject").replace("/push/links/", "/push/links/x"))).status == 401
    assert (await rig.rt.service.get(approval.id)).status is Status.WAITING


async def test_a_link_of_someone_who_may_not_decide_is_denied_at_the_press(rig: Rig) -> None:
    """The link's person is checked by the one authorization at the press, not trusted because a
    link was signed: a link for the viewer, or for the requester of the approval, decides nothing."""
    approval = await rig.suspend(requested_by="web:bob")
    seen = rounds.tag(rig.rt.signer, approval)
    for person in ("victor", "bob"):  # a viewer; the approver who asked for it
        browser = rig.service.browser(PUBLIC)  # a subscription of theirs, as if it had been pushed to
        sub = PushSubscription(browser.endpoint, person, browser.p256dh, browser.auth, rig.clock.now())
        await rig.rt.store.save_push_subscription(sub)
        age = timedelta(days=1)
        token = links.token(rig.rt.signer, approval, person, Outcome.APPROVE, seen, age, subscription=sub.id)
        status, _ = await follow(await rig.client(), links.PATH + token)
        assert status == 403
    assert (await rig.rt.service.get(approval.id)).status is Status.WAITING
