"""Retention drops the sealed raw args of decided approvals and the chain stays valid; each card
records the hash of what it showed; the settings are checked at start-up."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from gateway.config import Settings
from gateway.core.errors import ConfigError, RawPruned
from gateway.core.models import PRUNED, Approval, Outcome
from gateway.core.shown import content_hash
from gateway.runtime import Runtime
from gateway.service.approvals import SuspendRequest
from gateway.service.commands import Authority
from gateway.service.housekeeping import Pruning
from gateway.sla.housekeeping import Housekeeper
from gateway.testing import FakeClock
from tests.audit.conftest import decided


@pytest.mark.subprocess
async def test_retention_drops_raw_args_and_the_chain_holds(runtime: Runtime, clock: FakeClock) -> None:
    old = await decided(runtime, 2, clock)
    waiting, _ = await runtime.service.suspend(SuspendRequest(run_id="w", step="s", title="t", args={"iban": "x"}))
    await runtime.audit.seal()
    keeper = Housekeeper(Pruning(runtime.store), clock, raw_after=timedelta(days=30))
    assert await keeper.prune_raw() == 0  # not old enough yet
    clock.advance(days=31)
    (recent,) = await decided(runtime, 1, clock, run="recent")
    assert await keeper.prune_raw() == 2
    for approval_id in old:
        approval = await runtime.store.get_approval(approval_id)
        assert approval is not None and approval.sealed == PRUNED and approval.args  # the redacted view stays
    for approval_id in (waiting.id, recent):  # still waiting / decided just now: kept
        approval = await runtime.store.get_approval(approval_id)
        assert approval is not None and approval.sealed is not None
    verdict = await runtime.audit.verify()
    assert verdict.ok, verdict.problem


async def test_retention_counts_from_the_decision_and_never_serves_redacted_args_as_raw(
    runtime: Runtime, clock: FakeClock
) -> None:
    """The review's case: a 60-day policy decided on day 31 keeps its raw args for 30 days after
    the decision, not after the suspend; once they are gone, a resume-token holder gets a 410
    that says so, not the redacted args as if they were the ones to run."""
    approval, _ = await runtime.service.suspend(
        SuspendRequest(run_id="slow", step="pay", title="Pay", args={"iban": "DE89370400440532013000", "amount": 5})
    )
    clock.advance(days=31)
    await runtime.service.decide(approval.id, Outcome.APPROVE, "operator:alice", authority=Authority.OPERATOR)
    keeper = Housekeeper(Pruning(runtime.store), clock, raw_after=timedelta(days=30))
    assert await keeper.prune_raw() == 0  # created 31 days ago, decided just now: kept

    def resume(current: Approval | None) -> dict[str, Any]:
        assert current is not None
        return runtime.service.resumes.rehydration_document(current)

    assert resume(await runtime.store.get_approval(approval.id))["args"]["iban"] == "DE89370400440532013000"
    clock.advance(days=31)
    assert await keeper.prune_raw() == 1
    with pytest.raises(RawPruned) as gone:  # what a worker (or a resume-token holder) resumes with
        resume(await runtime.store.get_approval(approval.id))
    assert gone.value.status == 410 and gone.value.code == "raw_pruned"


async def test_card_posted_records_the_content_hash(runtime: Runtime) -> None:
    approval, _ = await runtime.service.suspend(
        SuspendRequest(run_id="r", step="s", title="Pay 490 EUR to bob@example.com", args={"amount": 490})
    )
    posted = [e for e in await runtime.store.list_events(approval.id) if e.kind == "card_posted"]
    assert posted and posted[0].data["content_hash"] == content_hash(approval)
    assert "bob@example.com" not in approval.title  # what was shown, and hashed, is the redacted view
    assert content_hash(approval.evolve(args={"amount": 4900})) != posted[0].data["content_hash"]


@pytest.mark.parametrize(
    ("sections", "key"),
    [
        ({"audit": {"signing_key": "not-a-key"}}, "audit.signing_key"),
        ({"audit": {"checkpoint_every": "10ms"}}, "audit.checkpoint_every"),
        ({"retention": {"raw_after": "5m"}}, "retention.raw_after"),
        ({"workers": {"w": {"command": ["true"], "accepts": 2}}}, "workers.w.accepts"),
    ],
)
def test_bad_settings_name_the_key(settings_factory: Callable[..., Settings], sections: dict, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        settings_factory(**sections)
    assert err.value.key == key
