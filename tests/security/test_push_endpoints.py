"""A web push subscription cannot aim the gateway at an address inside its network.

An approver's browser gives the push endpoint, and the gateway POSTs every card to it. An https
endpoint whose host is an address that is not public (cloud metadata at 169.254.169.254, a
private network, written as a dotted quad, a bare number, hex, or an IPv4-mapped IPv6 address)
is refused at subscription, and a push service's redirect is never followed: a public endpoint
could otherwise bounce each push (a 307 keeps the POST) to any internal URL.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web

from gateway.core.webpush import PushSubscription
from tests.web.conftest import csrf_of
from tests.webpush.support import PUBLIC, Rig

MAX_PER_USER = 20  # gateway.service.push.MAX_PER_USER, spelled out: the bound is part of the contract


@pytest.mark.parametrize(
    "endpoint",
    [
        "https://169.254.169.254/latest/meta-data/",
        "https://10.0.0.7/push/x",
        "https://192.168.1.1/push/x",
        "https://[::ffff:169.254.169.254]/push/x",
        "https://[fd00::1]/push/x",
        "https://2852039166/push/x",  # 169.254.169.254 as one number: the resolver takes it
        "https://0xa9.0xfe.0xa9.0xfe/push/x",
        "https://10.1/push/x",  # 10.0.0.1, shortened
    ],
)
async def test_a_push_endpoint_at_an_internal_address_is_refused(rig: Rig, endpoint: str) -> None:
    alice = await rig.client("alice")
    browser = rig.service.browser(PUBLIC)
    csrf = csrf_of(await (await alice.get("/")).text())
    resp = await alice.post("/push/subscribe", data={"csrf": csrf, **browser.form(), "endpoint": endpoint})
    assert resp.status == 400 and "endpoint" in await resp.text()
    assert await rig.rt.push.of("alice") == []


async def test_a_push_service_redirect_is_not_followed(rig: Rig, aiohttp_server: Callable[..., Any]) -> None:
    landed: list[str] = []

    async def bounce(request: web.Request) -> web.Response:
        raise web.HTTPTemporaryRedirect("/internal/admin")  # 307: a POST stays a POST

    async def internal(request: web.Request) -> web.Response:
        landed.append(request.method)
        return web.Response(status=201)

    app = web.Application()
    app.router.add_post("/push/bounce", bounce)
    app.router.add_route("*", "/internal/admin", internal)
    server = await aiohttp_server(app)
    browser = rig.service.browser(PUBLIC)
    endpoint = str(server.make_url("/push/bounce"))
    sub = PushSubscription(endpoint, "alice", browser.p256dh, browser.auth, rig.clock.now())
    await rig.rt.store.save_push_subscription(sub)
    await rig.suspend()
    await rig.rt.outbox.drain()
    assert landed == []


async def test_a_subscription_saved_before_at_an_internal_address_gets_no_push(rig: Rig) -> None:
    browser = rig.service.browser(PUBLIC)
    old = PushSubscription("https://10.0.0.7/push/x", "alice", browser.p256dh, browser.auth, rig.clock.now())
    await rig.rt.store.save_push_subscription(old)
    approval = await rig.suspend()
    assert await rig.rt.push.for_approval(approval) == []


async def test_one_approver_keeps_a_bounded_number_of_push_subscriptions(rig: Rig) -> None:
    """Each card is POSTed to every subscription: one approver subscribing endpoints by the
    thousand would make every card a flood of requests (at a host of their choosing). The oldest
    subscriptions beyond the bound are forgotten; another user's are not touched."""
    bob_phone, _ = await rig.subscribe(await rig.client("bob"))
    alice = await rig.client("alice")
    csrf = csrf_of(await (await alice.get("/")).text())
    keys = rig.service.browser(PUBLIC)
    sent = []
    for i in range(MAX_PER_USER + 5):
        endpoint = f"https://push.example/sub/{i}"
        rig.clock.advance(1)
        resp = await alice.post("/push/subscribe", data={"csrf": csrf, **keys.form(), "endpoint": endpoint})
        assert resp.status == 201
        sent.append(endpoint)
    kept = sorted(s.endpoint for s in await rig.rt.push.of("alice"))
    assert kept == sorted(sent[-MAX_PER_USER:])
    assert [s.endpoint for s in await rig.rt.push.of("bob")] == [bob_phone.endpoint]
