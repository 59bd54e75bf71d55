"""A new password ends the sessions the old one started.

An operator who learns that a web user's password leaked sets a new hash in `[web] passwords`
and restarts. The sessions signed in with the old password (the thief's among them) must end
then, as a removed user's do; a session started by the new password, or the config restarted
with the same password, goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.core.models import Status
from gateway.http.app import create_app
from gateway.http.web.auth import hash_password
from gateway.runtime import Runtime
from gateway.testing import FakeClock
from tests.web.conftest import HASH, sign_in
from tests.webpush.support import PRIVATE, PUBLIC, SUBJECT, action, build, push_settings
from tests.webpush.support import WEB as PUSH_WEB

NEW_PASSWORD = "a new and longer passphrase"
NEW_HASH = hash_password(NEW_PASSWORD, n=2**10)


async def test_a_changed_password_ends_the_sessions_of_the_old_one(
    aiohttp_client: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock
) -> None:
    async def gateway(hashed: str) -> Any:
        settings = settings_factory(web={"approvers": ["alice", "bob"], "passwords": {"alice": hashed, "bob": HASH}})
        return await aiohttp_client(create_app(settings, runtime=Runtime(settings, clock=clock, owner="test")))

    async def inbox(client: Any, cookie: str) -> int:
        client.session.cookie_jar.clear()
        client.session.cookie_jar.update_cookies({"hitl_session": cookie})
        return (await client.get("/", allow_redirects=False)).status

    before = await gateway(HASH)
    thief = (await sign_in(before, "alice")).cookies["hitl_session"].value
    before.session.cookie_jar.clear()  # bob signs in on a browser of his own
    bob = (await sign_in(before, "bob")).cookies["hitl_session"].value
    assert await inbox(before, thief) == 200

    same = await gateway(HASH)  # restarted, nothing changed: the session goes on
    assert await inbox(same, thief) == 200

    after = await gateway(NEW_HASH)  # alice's password changed
    assert await inbox(after, thief) == 303
    assert await inbox(after, bob) == 200  # another user's session is not touched
    fresh = (await sign_in(after, "alice", NEW_PASSWORD)).cookies["hitl_session"].value
    assert await inbox(after, fresh) == 200


async def test_a_changed_password_ends_the_push_subscriptions_of_the_old_one(
    aiohttp_client: Callable[..., Any],
    aiohttp_server: Callable[..., Any],
    settings_factory: Callable[..., Any],
    clock: FakeClock,
) -> None:
    """Whoever signed in with a leaked password may have subscribed their own browser: its pushes
    carry one-time links that decide as the victim without a sign-in, after the new password too."""
    before = await build(aiohttp_client, aiohttp_server, push_settings(settings_factory), clock)
    thief_browser, resp = await before.subscribe(await before.client("alice"))
    assert resp.status == 201
    hashes = {**PUSH_WEB["passwords"], "alice": NEW_HASH}
    webpush = {"public_key": PUBLIC, "private_key": PRIVATE, "subject": SUBJECT}
    changed = settings_factory(web={**PUSH_WEB, "passwords": hashes}, webpush=webpush)
    after = await build(aiohttp_client, aiohttp_server, changed, clock)
    await after.suspend()
    await after.rt.outbox.drain()
    assert thief_browser.received == []
    # alice, with the new password, subscribes her own browser: that one is pushed to
    mine = await after.new_client()
    assert (await sign_in(mine, "alice", NEW_PASSWORD)).status == 303
    her_browser, resp = await after.subscribe(mine)
    assert resp.status == 201
    await after.suspend(run_id="run-2")
    await after.rt.outbox.drain()
    assert len(her_browser.received) == 1 and thief_browser.received == []


async def test_a_changed_password_ends_the_links_already_pushed_to_the_old_ones_browsers(
    aiohttp_client: Callable[..., Any],
    aiohttp_server: Callable[..., Any],
    settings_factory: Callable[..., Any],
    clock: FakeClock,
) -> None:
    """The thief's browser got pushes before the password changed: their links decide without a
    sign-in, so they end with the subscription's password, as its next pushes do."""
    before = await build(aiohttp_client, aiohttp_server, push_settings(settings_factory), clock)
    thief_browser, resp = await before.subscribe(await before.client("alice"))
    assert resp.status == 201
    approval = await before.suspend(approvers=("web:alice",))
    await before.rt.outbox.drain()
    assert len(thief_browser.received) == 1
    hashes = {**PUSH_WEB["passwords"], "alice": NEW_HASH}
    webpush = {"public_key": PUBLIC, "private_key": PRIVATE, "subject": SUBJECT}
    changed = settings_factory(web={**PUSH_WEB, "passwords": hashes}, webpush=webpush)
    after = await build(aiohttp_client, aiohttp_server, changed, clock)
    page = await (await after.client()).get(action(thief_browser, "approve"))
    assert page.status == 410
    assert (await after.rt.service.get(approval.id)).status is Status.WAITING
