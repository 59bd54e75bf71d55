"""Store methods added by migration v2: pending prompts (the 'why reject?' question)."""

from __future__ import annotations

from datetime import timedelta

from gateway.runtime import Runtime
from gateway.store import Prompt
from gateway.store.migrations import LATEST


async def test_schema_is_at_latest(runtime: Runtime) -> None:
    assert LATEST >= 2 and await runtime.store.schema_version() == LATEST


async def test_take_prompt_once_by_its_owner_before_expiry(runtime: Runtime) -> None:
    store, now = runtime.store, runtime.clock.now()
    await store.save_prompt(
        Prompt("telegram:-1:10", "a1", "telegram:7", "reject_reason", now, now + timedelta(minutes=10))
    )
    assert await store.take_prompt("telegram:-1:10", "telegram:8", now) is None  # someone else
    taken = await store.take_prompt("telegram:-1:10", "telegram:7", now + timedelta(minutes=9))
    assert taken is not None and taken.approval_id == "a1" and taken.expires_at == now + timedelta(minutes=10)
    assert await store.take_prompt("telegram:-1:10", "telegram:7", now) is None  # consumed


async def test_expired_prompts_are_dropped(runtime: Runtime) -> None:
    store, now = runtime.store, runtime.clock.now()
    await store.save_prompt(Prompt("k", "a1", "telegram:7", "reject_reason", now, now + timedelta(minutes=10)))
    assert await store.take_prompt("k", "telegram:7", now + timedelta(minutes=10)) is None
    assert await store.take_prompt("k", "telegram:7", now) is None  # deleted on the way
