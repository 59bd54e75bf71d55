"""A push's links end with the subscription they were pushed to, and a device is revoked only by
its own person.

The links a push carries decide without a sign-in: whoever holds the phone (lost, stolen, or a
browser unsubscribed long ago) could approve with them until the approval's deadline. They name
the subscription they were pushed to, and work only while it is kept. The devices page's Revoke
takes an id in its path: another person's id, a POST without the page's CSRF token, or the same
POST replayed (after the browser subscribed again, too) changes nothing.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from aiohttp.test_utils import TestClient

from gateway.core import rounds
from gateway.core import webpush as links
from gateway.core.models import Outcome, Status
from gateway.core.webpush import PushSubscription
from tests.fakes.push_service import Browser
from tests.web.conftest import csrf_of
from tests.webpush.support import Rig, action, follow


async def _sub(rig: Rig, browser: Browser) -> PushSubscription:
    (sub,) = [s for s in await rig.rt.store.push_subscriptions() if s.endpoint == browser.endpoint]
    return sub


async def _csrf(client: TestClient[Any, Any]) -> str:
    return csrf_of(await (await client.get("/account/devices")).text())


async def _unchanged(rig: Rig, approval_id: str) -> None:
    approval = await rig.rt.service.get(approval_id)
    assert approval.status is Status.WAITING and approval.votes == ()


async def test_an_unsubscribed_browsers_links_are_refused_and_decide_nothing(rig: Rig) -> None:
    alice = await rig.client("alice")
    phone, _ = await rig.subscribe(alice)
    laptop, _ = await rig.subscribe(await rig.client("alice"))
    approval = await rig.suspend(approvers=("web:alice",))
    await rig.rt.outbox.drain()
    finder = await rig.client()
    opened = await finder.get(action(phone, "approve"))  # the page was open before
    assert opened.status == 200
    csrf = csrf_of(await opened.text())

    gone = await alice.post("/push/unsubscribe", data={"csrf": await _csrf(alice), "endpoint": phone.endpoint})
    assert (await gone.json()) == {"unsubscribed": True}
    for link in (action(phone, "approve"), action(phone, "reject")):
        page = await finder.get(link)
        assert page.status == 410 and "no longer gets notifications" in await page.text()
        confirm = await finder.post(link, data={"csrf": csrf, "reason": "x"})
        assert confirm.status == 410
    await _unchanged(rig, approval.id)
    assert (await follow(await rig.client(), action(laptop, "approve")))[0] == 200  # still subscribed
    assert (await rig.rt.service.get(approval.id)).status is Status.APPROVED


async def test_a_revoked_devices_links_are_refused_even_to_its_person_signed_in(rig: Rig) -> None:
    alice = await rig.client("alice")
    phone, _ = await rig.subscribe(alice)
    approval = await rig.suspend(approvers=("web:alice",))
    await rig.rt.outbox.drain()
    sub = await _sub(rig, phone)
    resp = await alice.post(f"/account/devices/{sub.id}/revoke", data={"csrf": await _csrf(alice)})
    assert resp.status == 200 and "Subscribed" in await resp.text()  # back on the page
    assert (await alice.get(action(phone, "approve"))).status == 410
    await _unchanged(rig, approval.id)


async def test_another_persons_device_cannot_be_revoked(rig: Rig) -> None:
    phone, _ = await rig.subscribe(await rig.client("alice"))
    sub = await _sub(rig, phone)
    for name in ("bob", "victor"):  # another approver; a viewer
        other = await rig.client(name)
        resp = await other.post(f"/account/devices/{sub.id}/revoke", data={"csrf": await _csrf(other)})
        assert resp.status == 404 and "Nothing changed" in await resp.text()
    assert await rig.rt.push.of("alice") == [sub]
    approval = await rig.suspend(approvers=("web:alice",))
    await rig.rt.outbox.drain()
    assert (await follow(await rig.client(), action(phone, "approve")))[0] == 200
    assert (await rig.rt.service.get(approval.id)).status is Status.APPROVED


async def test_a_forged_or_replayed_revoke_changes_nothing(rig: Rig) -> None:
    alice = await rig.client("alice")
    phone, _ = await rig.subscribe(alice)
    sub = await _sub(rig, phone)
    path = f"/account/devices/{sub.id}/revoke"
    for form in ({}, {"csrf": "x" * 32}):  # another site's form: it cannot read the page's token
        assert (await alice.post(path, data=form)).status == 403
    bob = await rig.client("bob")  # bob's own page's token is not alice's
    assert (await alice.post(path, data={"csrf": await _csrf(bob)})).status == 403
    assert await rig.rt.push.of("alice") == [sub]

    csrf = await _csrf(alice)
    assert (await alice.post(path, data={"csrf": csrf}, allow_redirects=False)).status == 303
    again, _ = await rig.subscribe(alice, phone)  # the same browser subscribes again: a new id
    assert again is phone
    (renewed,) = await rig.rt.push.of("alice")
    assert renewed.id != sub.id
    replay = await alice.post(path, data={"csrf": csrf}, allow_redirects=False)
    assert replay.status == 404
    assert await rig.rt.push.of("alice") == [renewed]


async def test_a_link_naming_someone_elses_subscription_is_refused(rig: Rig) -> None:
    """Defence in depth: a link is checked against its own person's subscriptions, so that a
    subscription id seen elsewhere cannot carry a link of another person."""
    bobs_phone, _ = await rig.subscribe(await rig.client("bob"))
    bobs = await _sub(rig, bobs_phone)
    approval = await rig.suspend()
    seen = rounds.tag(rig.rt.signer, approval)
    token = links.token(
        rig.rt.signer, approval, "alice", Outcome.APPROVE, seen, timedelta(days=1), subscription=bobs.id
    )
    assert (await (await rig.client()).get(links.PATH + token)).status == 410
    await _unchanged(rig, approval.id)


async def test_a_link_naming_no_subscription_is_refused(rig: Rig) -> None:
    """Links from before they named their subscription (purpose v1), or a v2 one without it,
    would be bound to nothing: they are refused, not taken as bound to every subscription."""
    await rig.subscribe(await rig.client("alice"))
    approval = await rig.suspend()
    data = {"a": approval.id, "o": "a", "u": "alice", "r": rounds.tag(rig.rt.signer, approval)}
    until = rig.clock.now() + timedelta(days=1)
    for purpose, payload in (("hitl.push.link.v1", data), (links.PURPOSE, data), (links.PURPOSE, data | {"s": ""})):
        token = rig.rt.signer.sign(purpose, payload, until)
        assert (await (await rig.client()).get(links.PATH + token)).status == 401
    await _unchanged(rig, approval.id)
