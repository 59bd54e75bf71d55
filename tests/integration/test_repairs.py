"""An operator's repairs (RetryJob, ResendCard) authorize in the use case, whichever front calls
it: the API, the CLI (`operator:cli`) and the web inbox (`web:NAME`) pass, an agent never does."""

from __future__ import annotations

import dataclasses

import pytest

from gateway.core.errors import NotFound, OperatorRequired
from gateway.runtime import Runtime
from gateway.service.deliveries import ResendCard
from gateway.service.jobs import RetryJob


@pytest.mark.parametrize("by", ["agent:billing", "agent:key-0a1b2c"])
async def test_an_agent_is_refused_before_anything_is_read(runtime: Runtime, by: str) -> None:
    with pytest.raises(OperatorRequired, match=by):  # 403 even for an id that does not exist
        await runtime.jobs.retry(RetryJob("nope", by))
    with pytest.raises(OperatorRequired, match=by):
        await runtime.deliveries.resend(ResendCard("nope", "web", by))


@pytest.mark.parametrize("by", ["operator:cli", "operator:alice", "web:bob"])
async def test_operators_and_inbox_users_reach_the_use_case(runtime: Runtime, by: str) -> None:
    with pytest.raises(NotFound, match="'nope' not found"):
        await runtime.jobs.retry(RetryJob("nope", by))
    with pytest.raises(NotFound, match="'nope' not found"):
        await runtime.deliveries.resend(ResendCard("nope", "web", by))


def test_the_commands_are_frozen() -> None:
    cmd = RetryJob("a1", "operator:alice", on_behalf_of="carol")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cmd.by = "agent:x"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ResendCard("a1", "web", "operator:alice").address = "slack:C1"  # type: ignore[misc]
