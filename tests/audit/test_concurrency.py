"""The chains stay valid under concurrency: 50 decisions at once (both backends: SQLite's
group commit puts several in one transaction), and three PostgreSQL replicas writing events of
the same approvals and sealing checkpoints at the same time."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from gateway.config import Settings
from gateway.core.errors import AlreadyDecided
from gateway.core.models import Outcome
from gateway.runtime import Runtime
from gateway.service.approvals import SuspendRequest
from gateway.service.commands import Authority
from gateway.testing import FakeClock
from tests.audit.conftest import SIGNING_KEY


async def suspend_many(rt: Runtime, n: int, prefix: str) -> list[str]:
    made = await asyncio.gather(
        *(
            rt.service.suspend(SuspendRequest(run_id=f"{prefix}-{i}", step="pay", title="Pay", worker="agent"))
            for i in range(n)
        )
    )
    return [a.id for a, _ in made]


async def decide(rt: Runtime, approval_id: str, actor: str) -> bool:
    try:
        await rt.service.decide(approval_id, Outcome.APPROVE, actor, authority=Authority.OPERATOR)
        return True
    except AlreadyDecided:
        return False


@pytest.mark.subprocess
async def test_fifty_concurrent_decisions(runtime: Runtime) -> None:
    ids = await suspend_many(runtime, 25, "c")
    # two operators on each approval at once (one wins), with checkpoints sealing in between
    calls = [decide(runtime, i, who) for i in ids for who in ("operator:alice", "operator:bob")]
    results = await asyncio.gather(*calls, runtime.audit.checkpoint(), runtime.audit.checkpoint())
    assert sum(1 for r in results[:50] if r) == 25
    await asyncio.gather(runtime.worker.drain(), runtime.outbox.drain(), runtime.audit.checkpoint())
    await runtime.audit.seal()
    verdict = await runtime.audit.verify()
    assert verdict.ok, verdict.problem
    assert "of 25 approvals" in verdict.summary


@pytest.mark.subprocess
async def test_three_postgres_replicas(pg_url: str, settings_factory: Callable[..., Settings], store_url: str) -> None:
    if store_url.startswith("sqlite"):
        pytest.skip("replicas share a PostgreSQL database (the postgres variant runs it)")
    settings = settings_factory(
        store={"url": pg_url}, workers={"agent": {"command": ["true"]}}, audit={"signing_key": SIGNING_KEY}
    )
    replicas = [Runtime(settings, clock=FakeClock(), owner=f"replica-{n}") for n in range(3)]
    for rt in replicas:
        await rt.start(background=False)
    try:
        ids = [
            i
            for batch in await asyncio.gather(*(suspend_many(rt, 10, f"r{n}") for n, rt in enumerate(replicas)))
            for i in batch
        ]
        # every replica tries every approval (events of one approval from three places at
        # once), while each seals checkpoints
        calls = [decide(rt, i, f"operator:{n}") for i in ids for n, rt in enumerate(replicas)]
        results = await asyncio.gather(*calls, *(rt.audit.checkpoint() for rt in replicas))
        assert sum(1 for r in results[: len(calls)] if r) == len(ids)
        await asyncio.gather(*(rt.worker.drain() for rt in replicas), *(rt.audit.checkpoint() for rt in replicas))
        await asyncio.gather(*(rt.audit.seal() for rt in replicas))
        verdict = await replicas[1].audit.verify()
        assert verdict.ok, verdict.problem
        assert f"of {len(ids)} approvals" in verdict.summary
        checkpoints = await replicas[0].store.audit_checkpoints(0, 1e18)
        assert [c.seq for c in checkpoints] == list(range(1, len(checkpoints) + 1))
        assert sum(c.heads for c in checkpoints) >= len(ids)
    finally:
        for rt in replicas:
            await rt.stop()


async def test_verify_while_the_gateway_writes_sees_no_break(runtime: Runtime, clock: FakeClock) -> None:
    """Each chunk's events and head rows come from one snapshot: a decision committed between
    the two reads made a clean trail look broken (PostgreSQL, the review's live verify)."""
    from gateway.core.models import NewEvent

    ids = await suspend_many(runtime, 5, "live")
    await runtime.audit.seal()
    stop = asyncio.Event()

    async def write() -> None:
        while not stop.is_set():
            events = [NewEvent(i, "comment_added", clock.now(), "operator:alice", data={"c": "x"}) for i in ids]
            await runtime.store.append_events(events)

    writer = asyncio.create_task(write())
    try:
        verdicts = [await runtime.audit.verify() for _ in range(20)]
    finally:
        stop.set()
        await writer
    assert [v.problem for v in verdicts if not v.ok] == []
