"""The Web Push subscriptions port on every backend: saved (a browser subscribing again replaces
its row), listed, and deleted by endpoint, or only by its own user."""

from __future__ import annotations

from datetime import timedelta

from gateway.core.webpush import PushSubscription
from gateway.store import Store
from tests.store.conftest import NOW


def _sub(endpoint: str, user: str, key: str = "k1") -> PushSubscription:
    return PushSubscription(f"https://push.example/{endpoint}", user, key, "auth", NOW)


async def test_subscriptions_are_saved_replaced_and_deleted(store: Store) -> None:
    await store.save_push_subscription(_sub("a", "alice"))
    await store.save_push_subscription(_sub("b", "bob"))
    later = PushSubscription("https://push.example/a", "carol", "k2", "auth2", NOW + timedelta(minutes=1))
    await store.save_push_subscription(later)  # the same browser, now carol's
    assert await store.push_subscriptions() == [_sub("b", "bob"), later]
    assert not await store.delete_push_subscription("https://push.example/a", "bob")  # not bob's
    assert await store.delete_push_subscription("https://push.example/a", "carol")
    assert await store.delete_push_subscription("https://push.example/b")
    assert not await store.delete_push_subscription("https://push.example/b")
    assert await store.push_subscriptions() == []
