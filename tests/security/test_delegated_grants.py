"""A delegate decides for the delegator one approval at a time, and makes no standing grant.

"Approve and allow for 1h" (a standing grant) approves every matching suspend that follows, as
the person who granted, without asking anyone. Through a delegation that person is the delegate
acting on the delegator's rights: what such a grant approved was recorded as the delegate's own
grant, not on behalf of the delegator nor in the delegation's trail, and (before a grant's
granter was checked at each suspend) it went on after the delegation was revoked. The vote that
asks for one is refused (400 naming `grant`), and nothing is recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from gateway.core.errors import ValidationError
from gateway.core.models import Outcome, Status
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.service.delegations import Delegate
from gateway.settings import Settings
from gateway.testing import FakeClock
from tests.helpers import table_counts

ARGS = {"amount": 100, "to": "ACME"}


async def test_a_delegate_cannot_make_a_standing_grant_that_outlives_the_delegation(
    settings_factory: Callable[..., Settings], clock: FakeClock
) -> None:
    settings = settings_factory(
        web={"approvers": ["alice", "carol"]}, policies={"default": {"timeout": "1h", "grants": ["1h", "run"]}}
    )
    rt = Runtime(settings, clock=clock, owner="test")
    await rt.start(background=False)
    try:
        await _attempt(rt, clock)
    finally:
        await rt.stop()


async def _attempt(rt: Runtime, clock: FakeClock) -> None:
    async def suspend(run: str) -> str:
        req = SuspendRequest(run, "charge", "Charge ACME", args=dict(ARGS), approvers=("web:alice",))
        return (await rt.service.suspend(req))[0].id

    first = await suspend("run-1")
    away = Delegate("web:alice", "web:carol", clock.now() + timedelta(days=1), "operator:ops", True)
    made = await rt.service.delegations.create(away)
    before = await table_counts(rt)
    with pytest.raises(ValidationError) as refused:
        await rt.service.decide(first, Outcome.APPROVE, "web:carol", channel="web", grant="1h")
    assert refused.value.field == "grant"
    assert await table_counts(rt) == before and await rt.store.list_grants(clock.now(), live=True, limit=10) == []

    # carol may still approve it for alice, without a grant; the delegation then ends
    assert (await rt.service.decide(first, Outcome.APPROVE, "web:carol", channel="web")).status is Status.APPROVED
    await rt.service.delegations.revoke(made.id, "web:alice", operator=False)
    later = await rt.service.get(await suspend("run-2"))
    assert later.status is Status.WAITING  # nobody's grant approves alice's approvals now
