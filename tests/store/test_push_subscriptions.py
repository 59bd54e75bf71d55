"""The Web Push subscriptions port on every backend: saved (a browser subscribing again replaces
its row, and its id), listed, found by id, and deleted by endpoint, or only by its own user, or
revoked by id, only by its own user."""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest

from gateway.core.webpush import PushSubscription
from gateway.store import Store, open_store
from gateway.store.migrations import MIGRATIONS
from tests.store.conftest import NOW
from tests.store.test_schema import _execute


def _sub(endpoint: str, user: str, key: str = "k1") -> PushSubscription:
    return PushSubscription(f"https://push.example/{endpoint}", user, key, "auth", NOW, id=f"id-{endpoint}")


async def test_subscriptions_are_saved_replaced_and_deleted(store: Store) -> None:
    await store.save_push_subscription(_sub("a", "alice"))
    await store.save_push_subscription(_sub("b", "bob"))
    later = PushSubscription("https://push.example/a", "carol", "k2", "auth2", NOW + timedelta(minutes=1))
    await store.save_push_subscription(later)  # the same browser, now carol's
    assert await store.push_subscriptions() == [_sub("b", "bob"), later]
    assert await store.push_subscription("id-a") is None  # replaced: its old id is gone
    assert await store.push_subscription(later.id) == later
    assert not await store.delete_push_subscription("https://push.example/a", "bob")  # not bob's
    assert await store.delete_push_subscription("https://push.example/a", "carol")
    assert await store.delete_push_subscription("https://push.example/b")
    assert not await store.delete_push_subscription("https://push.example/b")
    assert await store.push_subscriptions() == []


async def test_a_subscription_is_revoked_by_id_by_its_own_user_only(store: Store) -> None:
    mine = PushSubscription("https://push.example/p", "alice", "k1", "auth", NOW, "mark", label="Chrome on Android")
    await store.save_push_subscription(mine)
    assert await store.push_subscription(mine.id) == mine
    assert not await store.revoke_push_subscription(mine.id, "bob")  # not bob's
    assert not await store.revoke_push_subscription("another-id", "alice")
    assert await store.push_subscriptions() == [mine]
    assert await store.revoke_push_subscription(mine.id, "alice")
    assert not await store.revoke_push_subscription(mine.id, "alice")  # replayed
    assert await store.push_subscription(mine.id) is None and await store.push_subscriptions() == []


async def test_v29_gives_each_subscription_saved_before_an_id_of_its_own(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upgrading, on both backends: the rows saved before get distinct random ids (the devices
    page's Revoke names one), and an empty label."""
    for module in ("gateway.store.sqlite.migrate", "gateway.store.postgres.migrate"):
        older = tuple(m for m in MIGRATIONS if m.version < 29)
        monkeypatch.setattr(importlib.import_module(module), "MIGRATIONS", older)
    store = open_store(store_url)
    await store.open()
    await store.close()
    insert = (
        "INSERT INTO push_subscriptions (endpoint, user_name, p256dh, auth, created_at, password_mark)"
        " VALUES ($1, $2, 'k', 'a', 0, NULL)"
    )
    await _execute(store_url, [(insert, (f"https://push.example/{n}", "alice")) for n in ("a", "b")])
    monkeypatch.undo()
    store = open_store(store_url)
    await store.open()
    try:
        subs = await store.push_subscriptions()
        assert len({s.id for s in subs}) == 2 and all(len(s.id) >= 16 for s in subs)
        assert [s.label for s in subs] == ["", ""]
        assert await store.push_subscription(subs[0].id) == subs[0]
    finally:
        await store.close()
    if store_url.startswith("postgres"):  # an older replica, during a rolling upgrade, names no id
        await _execute(store_url, [(insert, ("https://push.example/c", "bob"))])
        store = open_store(store_url)
        await store.open()
        try:
            ids = {s.id for s in await store.push_subscriptions()}
            assert len(ids) == 3 and "" not in ids
        finally:
            await store.close()
