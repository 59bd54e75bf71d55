"""The inbox's devices page (/account/devices): a person's own push subscriptions, and Revoke.

Against the real aiohttp test server and the local push service (tests/fakes/push_service.py),
as tests/webpush/test_push.py: a revoked device gets no more pushes, and the links already
pushed to it stop working; another device of the same person keeps both.
"""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from gateway.core.models import Status
from gateway.core.webpush import device_label
from tests.web.conftest import csrf_of
from tests.webpush.support import PUBLIC, Rig, action, follow

ANDROID_CHROME = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko)"
    " Chrome/126.0.0.0 Mobile Safari/537.36"
)


async def _revoke(client: TestClient[Any, Any], sub_id: str) -> Any:
    """Press the page's Revoke of `sub_id`, with the page's CSRF token."""
    csrf = csrf_of(await (await client.get("/account/devices")).text())
    return await client.post(f"/account/devices/{sub_id}/revoke", data={"csrf": csrf}, allow_redirects=False)


async def test_the_devices_page_lists_ones_own_subscriptions_and_is_in_the_nav(rig: Rig) -> None:
    alice, bob = await rig.client("alice"), await rig.client("bob")
    csrf = csrf_of(await (await alice.get("/")).text())
    phone = rig.service.browser(PUBLIC)
    form = {"csrf": csrf, **phone.form()}
    resp = await alice.post("/push/subscribe", data=form, headers={"User-Agent": ANDROID_CHROME})
    assert resp.status == 201
    await rig.subscribe(bob)
    assert '<a href="/account/devices">Devices</a>' in await (await alice.get("/")).text()
    page = await alice.get("/account/devices")
    text = await page.text()
    assert page.status == 200 and page.headers["Cache-Control"] == "no-store"
    (mine,) = await rig.rt.push.of("alice")
    (bobs,) = await rig.rt.push.of("bob")
    assert "Chrome on Android" in text and rig.clock.now().strftime("%Y-%m-%d %H:%M UTC") in text
    assert f"/account/devices/{mine.id}/revoke" in text and bobs.id not in text  # only her own
    host = phone.endpoint.split("//", 1)[1].split("/", 1)
    assert host[0].split(":")[0] in text and host[1] not in text  # the endpoint's path is its secret
    signed_out = await (await rig.client()).get("/account/devices", allow_redirects=False)
    assert signed_out.status == 303 and signed_out.headers["Location"] == "/login"


async def test_revoking_a_device_ends_its_pushes_and_its_links_but_not_another_devices(rig: Rig) -> None:
    alice = await rig.client("alice")
    lost, _ = await rig.subscribe(alice)
    kept, _ = await rig.subscribe(alice)
    first = await rig.suspend(approvers=("web:alice",))
    await rig.rt.outbox.drain()
    assert len(lost.received) == len(kept.received) == 1
    lost_sub = next(s for s in await rig.rt.push.of("alice") if s.endpoint == lost.endpoint)

    resp = await _revoke(alice, lost_sub.id)
    assert resp.status == 303 and resp.headers["Location"] == "/account/devices"
    assert [s.endpoint for s in await rig.rt.push.of("alice")] == [kept.endpoint]
    assert lost_sub.id not in await (await alice.get("/account/devices")).text()

    finder = await rig.client()  # whoever found the phone taps the notification's Approve
    refused = await finder.get(action(lost, "approve"))
    assert refused.status == 410 and "no longer gets notifications" in await refused.text()
    assert (await rig.rt.service.get(first.id)).status is Status.WAITING

    await rig.suspend(run_id="run-2", approvers=("web:alice",))
    await rig.rt.outbox.drain()
    assert len(lost.received) == 1 and len(kept.received) == 2  # no more pushes to the lost phone
    status, _ = await follow(await rig.client(), action(kept, "approve", 0))  # her other phone's link
    assert status == 200
    assert (await rig.rt.service.get(first.id)).status is Status.APPROVED


def test_a_device_is_named_by_its_browser_and_system() -> None:
    assert device_label(ANDROID_CHROME) == "Chrome on Android"
    firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
    assert device_label(firefox) == "Firefox on Linux"
    iphone = (
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko)"
        " Version/17.5 Mobile/15E148 Safari/604.1"
    )
    assert device_label(iphone) == "Safari on iPhone"
    edge = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/126.0 Safari/537.36 Edg/126.0"
    assert device_label(edge) == "Edge on Windows"
    assert device_label("") == "" and device_label("<script>alert(1)</script>") == ""
