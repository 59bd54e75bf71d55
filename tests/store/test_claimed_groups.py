"""The claimed groups port on every backend: a sign-in replaces an identity's groups, and
another identity's stay as they were."""

from __future__ import annotations

from datetime import timedelta

from gateway.store import Store
from tests.store.conftest import NOW


async def test_a_sign_in_replaces_the_identitys_claimed_groups(store: Store) -> None:
    assert await store.claimed_groups("web:alice@example.com") == frozenset()
    await store.set_claimed_groups("web:alice@example.com", ["finance", "ops", "finance"], NOW)
    await store.set_claimed_groups("web:bob@example.com", ["ops"], NOW)
    assert await store.claimed_groups("web:alice@example.com") == {"finance", "ops"}
    await store.set_claimed_groups("web:alice@example.com", ["ops"], NOW + timedelta(hours=1))
    assert await store.claimed_groups("web:alice@example.com") == {"ops"}
    await store.set_claimed_groups("web:alice@example.com", [], NOW + timedelta(hours=2))
    assert await store.claimed_groups("web:alice@example.com") == frozenset()
    assert await store.claimed_groups("web:bob@example.com") == {"ops"}
