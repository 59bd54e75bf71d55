"""The run page's reads on both backends: one namespace's run of an id, never another's."""

from __future__ import annotations

from datetime import timedelta

from gateway.core.models import Outcome, StepRecord, StepStatus
from gateway.core.principals import Principal
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.service.commands import Authority
from gateway.service.queries import Reads
from gateway.testing import FakeClock


async def test_a_runs_reads_keep_to_its_namespace(runtime: Runtime, clock: FakeClock) -> None:
    svc, store, now = runtime.service, runtime.store, clock.now()
    ids: dict[str, list[str]] = {}
    for who in ("agent:a", "agent:b", ""):
        principal = Principal("agent", who.removeprefix("agent:")) if who else None
        for step in ("one", "two"):
            req = SuspendRequest("inv-7", step, f"{who or 'none'} {step}", worker="agent")
            approval, _ = await svc.suspend(req, principal)
            ids.setdefault(who, []).append(approval.id)
            clock.advance(seconds=1)
        record = StepRecord("inv-7", f"fetch-{who or 'none'}", StepStatus.SUCCEEDED, None, 2, now, now)
        await store.record_step(record, namespace=who)
    await svc.decide(ids["agent:a"][0], Outcome.APPROVE, "operator:cli", authority=Authority.OPERATOR)
    reads = Reads(store)
    assert await reads.run_namespaces("inv-7") == ["", "agent:a", "agent:b"]
    for who in ("agent:a", "agent:b", ""):
        view = await reads.run("inv-7", who)
        assert [a.id for a in view.approvals] == ids[who], who  # its own, oldest first
        assert [s.name for s in view.steps] == [f"fetch-{who or 'none'}"]
        assert set(view.events) == set(ids[who])
    a = await reads.run("inv-7", "agent:a")
    assert list(a.jobs) == [ids["agent:a"][0]] and not (await reads.run("inv-7", "agent:b")).jobs
    assert (await reads.run("inv-7", "agent:c")).empty and (await reads.run("other", "")).empty
    assert timedelta(0) <= a.approvals[1].created_at - a.approvals[0].created_at
