"""Groups in the store, on every backend: a sign-in replaces an identity's claimed groups (and
another identity's stay as they were); an escalation to a group stores the wider approvers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gateway.core import policy as rules
from gateway.core.models import NewEvent, OnTimeout, Policy
from gateway.store import Store, TransitionWrite
from gateway.testing import make_approval
from tests.store.conftest import NOW

LONG_AGO = datetime(2000, 1, 1, tzinfo=UTC)  # claims made since: all of them


async def test_a_sign_in_replaces_the_identitys_claimed_groups(store: Store) -> None:
    assert await store.claimed_groups("web:alice@example.com", LONG_AGO) == frozenset()
    await store.set_claimed_groups("web:alice@example.com", ["finance", "ops", "finance"], NOW)
    await store.set_claimed_groups("web:bob@example.com", ["ops"], NOW)
    assert await store.claimed_groups("web:alice@example.com", LONG_AGO) == {"finance", "ops"}
    await store.set_claimed_groups("web:alice@example.com", ["ops"], NOW + timedelta(hours=1))
    assert await store.claimed_groups("web:alice@example.com", LONG_AGO) == {"ops"}
    await store.set_claimed_groups("web:alice@example.com", [], NOW + timedelta(hours=2))
    assert await store.claimed_groups("web:alice@example.com", LONG_AGO) == frozenset()
    assert await store.claimed_groups("web:bob@example.com", LONG_AGO) == {"ops"}


async def test_a_claim_counts_only_since_the_given_time(store: Store) -> None:
    """A claim lasts as a sign-in's session may: asked since a later time, an older claim is none."""
    await store.set_claimed_groups("web:alice@example.com", ["finance"], NOW)
    assert await store.claimed_groups("web:alice@example.com", NOW) == {"finance"}
    assert await store.claimed_groups("web:alice@example.com", NOW + timedelta(seconds=1)) == frozenset()


async def test_an_escalation_to_a_group_stores_the_wider_approvers(store: Store) -> None:
    policy = Policy(
        name="p",
        timeout=timedelta(minutes=1),
        on_timeout=OnTimeout.ESCALATE,
        escalate_to=("group:ops", "email:boss@example.com"),
    )
    created = make_approval(policy, NOW, 1, approvers=("group:finance",))
    await store.create_approval(created, [], [])
    moved = rules.time_out(created, NOW + timedelta(minutes=1))
    write = TransitionWrite(moved.approval, created.version, [NewEvent(created.id, moved.event, NOW)])
    assert await store.save_policy_transitions([write]) == [True]
    got = await store.get_approval(created.id)
    assert got is not None and got.escalations == 1
    assert got.approvers == ("group:finance", "group:ops")
    assert got.channels == (*created.channels, "email:boss@example.com")
