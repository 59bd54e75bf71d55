"""Stores for the contract suite: one opened store per test, on every backend."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime

import pytest

from gateway.core.models import Approval, Policy, Status
from gateway.service import new_id
from gateway.store import Store, open_store

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
StoreFactory = Callable[[], Awaitable[Store]]


@pytest.fixture
def db_url(store_url: str) -> str:
    """Here `runtime`, `client` and `settings` run on both backends too (e.g. test_web_queries)."""
    return store_url


@pytest.fixture
async def store_factory(store_url: str) -> AsyncIterator[StoreFactory]:
    """Open more stores on the same database: each one stands for a replica."""
    opened: list[Store] = []

    async def make() -> Store:
        store = open_store(store_url)
        await store.open()
        opened.append(store)
        return store

    yield make
    for store in opened:
        await store.close()


@pytest.fixture
async def store(store_factory: StoreFactory) -> Store:
    return await store_factory()


def make_approval(key: str | None = None, **over: object) -> Approval:
    approval = Approval(
        id=new_id(),
        idempotency_key=key or new_id(),
        run_id="run-1",
        step="charge",
        title="Charge ACME",
        summary="",
        args={"amount": 42},
        state={"cursor": 1},
        channels=("web",),
        approvers=(),
        policy=Policy(),
        worker="agent",
        requested_by=None,
        status=Status.WAITING,
        created_at=NOW,
        deadline=None,
        args_hash="h" * 64,
    )
    return approval.evolve(**over)
