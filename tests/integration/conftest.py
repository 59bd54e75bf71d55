"""Fixtures for the integration tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from gateway.runtime import Runtime
from gateway.testing import FakeClock

MakeRt = Callable[..., Awaitable[Runtime]]


@pytest.fixture
async def make_rt(settings_factory: Callable[..., Any], clock: FakeClock) -> AsyncIterator[MakeRt]:
    started: list[Runtime] = []

    async def make(**workers: dict[str, Any]) -> Runtime:
        rt = Runtime(settings_factory(workers=workers), clock=clock, owner="test")
        await rt.start(background=False)
        started.append(rt)
        return rt

    yield make
    for rt in started:
        await rt.stop()
