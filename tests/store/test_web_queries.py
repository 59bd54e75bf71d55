"""The Store methods added for the web inbox, dashboard and /metrics."""

from __future__ import annotations

from datetime import timedelta

from gateway.core.models import JobStatus, Outcome, Status, StepRecord, StepStatus
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.service.commands import Authority
from gateway.store import Store
from gateway.testing import FakeClock
from tests.store.conftest import make_approval


async def test_list_approvals_by_age_filters(runtime: Runtime, clock: FakeClock) -> None:
    svc = runtime.service
    ids = []
    for run, channels in (("r1", ("web",)), ("r2", ("web",)), ("r_%", ("web",))):
        approval, _ = await svc.suspend(SuspendRequest(run, "s", f"t-{run}", channels=channels))
        ids.append(approval.id)
        clock.advance(seconds=5)
    await svc.decide(ids[1], Outcome.APPROVE, "operator:cli", authority=Authority.OPERATOR)
    store = runtime.store
    assert [a.id for a in await store.list_approvals_by_age()] == ids  # oldest first
    assert [a.id for a in await store.list_approvals_by_age(status=Status.WAITING)] == [ids[0], ids[2]]
    assert [a.id for a in await store.list_approvals_by_age(run_id="r_%")] == [ids[2]]
    assert len(await store.list_approvals_by_age(channel="web")) == 3
    assert await store.list_approvals_by_age(channel="we") == []  # not a prefix match
    assert await store.list_approvals_by_age(channel="telegram") == []
    assert await store.list_approvals_by_age(channel="%") == []  # LIKE wildcards are escaped
    assert [a.id for a in await store.list_approvals_by_age(limit=1)] == [ids[0]]
    first = await store.get_approval(ids[0])
    assert first is not None
    chat = first.evolve(id="tg1", idempotency_key="tg1", channels=("telegram:-100", "slack:C_1"))
    await store.create_approval(chat, [], [])
    for address, found in (("telegram", ["tg1"]), ("telegram:-100", ["tg1"]), ("telegram:-10", []), ("slack:C%", [])):
        assert [a.id for a in await store.list_approvals_by_age(channel=address)] == found, address


async def test_step_stats_and_job_counts(runtime: Runtime, clock: FakeClock) -> None:
    store, now = runtime.store, clock.now()
    rows = (
        ("r1", "fetch", StepStatus.SUCCEEDED, 3, 2.0),
        ("r2", "fetch", StepStatus.FAILED, 2, 4.0),
        ("r1", "charge", StepStatus.SUCCEEDED, 1, 9.0),
        ("r1", "approve", StepStatus.SUSPENDED, 1, 500.0),
    )
    for run, name, status, attempts, secs in rows:
        await store.record_step(
            StepRecord(run, name, status, None, attempts, now, now + timedelta(seconds=secs)), namespace=""
        )
    stats = await store.step_stats()
    assert [s["name"] for s in stats] == ["fetch", "charge"]  # most retries first, suspended left out
    fetch = stats[0]
    assert (fetch["runs"], fetch["attempts"], fetch["retries"], fetch["failures"]) == (2, 5, 3, 1)
    assert fetch["mean_seconds"] == 3.0 and fetch["total_seconds"] == 6.0
    assert await store.count_jobs_by_status() == {}
    approval, _ = await runtime.service.suspend(SuspendRequest("r9", "s", "t", worker="agent"))
    await runtime.service.decide(approval.id, Outcome.APPROVE, "operator:cli", authority=Authority.OPERATOR)
    assert await store.count_jobs_by_status() == {JobStatus.QUEUED.value: 1}


async def test_inbox_search_looks_in_title_summary_run_step_and_agent(store: Store) -> None:
    """On SQLite and PostgreSQL (`store` is parametrised): case-insensitive, wildcards literal."""
    rows = (
        ("a1", dict(title="Pay ACME invoice", summary="", run_id="r1", step="charge", agent="agent:billing")),
        ("a2", dict(title="Deploy", summary="Roll out **v2** to 50% of hosts", run_id="r2", step="ship", agent=None)),
        ("a3", dict(title="Mail", summary="", run_id="nightly_2", step="send", agent="agent:mailer")),
    )
    for ident, fields in rows:
        await store.create_approval(make_approval(ident, id=ident, **fields), [], [])

    async def found(text: str) -> list[str]:
        return [a.id for a in await store.list_approvals_by_age(search=text)]

    assert await found("acme") == ["a1"]  # title, any case
    assert await found("ROLL OUT") == ["a2"]  # summary
    assert await found("nightly") == ["a3"]  # run id
    assert await found("ship") == ["a2"]  # step
    assert await found("billing") == ["a1"]  # agent
    assert await found("50%") == ["a2"] and await found("%") == ["a2"]  # `%` is a plain character
    assert await found("y_2") == ["a3"] and await found("_") == ["a3"]  # so is `_`
    assert await found("\\") == []
    assert await found("nothing like it") == []
    assert await found("") == ["a1", "a2", "a3"]  # no search: everything
    assert [a.id for a in await store.list_approvals_by_age(search="a", status=Status.WAITING, limit=1)] == ["a1"]
