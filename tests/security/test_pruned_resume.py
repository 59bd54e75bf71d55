"""An agent holding a resume token, after retention removed its approval's raw args: it must not
be handed the redacted args as the ones to run ("[redacted:iban]" charged as an IBAN), nor get a
rehydration at all (issue 19's review, D6)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from gateway.config import Settings
from gateway.core.errors import RawPruned
from gateway.core.models import Outcome
from gateway.runtime import Runtime
from gateway.service.approvals import SuspendRequest
from gateway.service.commands import Authority
from gateway.service.housekeeping import Pruning
from gateway.sla.housekeeping import Housekeeper
from gateway.testing import FakeClock


@pytest.fixture
def db_url(store_url: str) -> str:
    return store_url


@pytest.fixture
def settings(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory()


async def test_a_resume_after_retention_is_refused_not_served_redacted_args(runtime: Runtime, clock: FakeClock) -> None:
    raw = {"iban": "DE89370400440532013000", "amount": 490}
    approval, _ = await runtime.service.suspend(SuspendRequest(run_id="r", step="pay", title="Pay", args=raw))
    token = runtime.service.resumes.resume_token(approval)
    await runtime.service.decide(approval.id, Outcome.APPROVE, "operator:alice", authority=Authority.OPERATOR)
    assert (await runtime.service.resumes.rehydrate(token))["args"] == raw  # before: the raw args, to the token holder
    clock.advance(days=2)
    assert await Housekeeper(Pruning(runtime.store), clock, raw_after=timedelta(days=1)).prune_raw() == 1
    with pytest.raises(RawPruned) as refused:
        await runtime.service.resumes.rehydrate(token)
    assert (refused.value.status, refused.value.code) == (410, "raw_pruned")
    shown = await runtime.store.get_approval(approval.id)
    assert shown is not None and shown.args["iban"] != raw["iban"]  # the redacted view stays readable
