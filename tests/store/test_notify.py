"""LISTEN/NOTIFY: work committed by one replica wakes the loops of another within milliseconds."""

from __future__ import annotations

import asyncio
import contextlib
import time

from gateway.core.models import DeliveryStatus, NewOutbox, OutboxKind
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.store import NewJob, open_store
from gateway.testing import FakeClock, make_settings
from tests.store.conftest import NOW, make_approval


async def test_a_commit_on_one_store_notifies_another(pg_url: str) -> None:
    a, b = open_store(pg_url), open_store(pg_url)
    await a.open()
    await b.open()
    got: asyncio.Queue[tuple[str, str, float]] = asyncio.Queue()
    try:
        await b.subscribe(lambda topic, payload: got.put_nowait((topic, payload, time.perf_counter())))
        approval = make_approval(wake_at=NOW)
        start = time.perf_counter()
        await a.create_approval(approval, [], [NewOutbox(approval.id, "web", OutboxKind.POST)])
        topics = {}
        for _ in range(2):
            topic, payload, at = await asyncio.wait_for(got.get(), 2)
            topics[topic] = (payload, at - start)
        assert set(topics) == {"outbox", "wake"}
        assert float(topics["wake"][0]) == NOW.timestamp()
        assert topics["outbox"][1] < 0.5, f"wake-up took {topics['outbox'][1]:.3f}s"
        decided = approval.evolve(version=2, wake_at=None)
        await a.save_transition(decided, 1, [], [], NewJob(approval.id, "agent"))
        topic, _, _ = await asyncio.wait_for(got.get(), 2)
        assert topic == "jobs"
    finally:
        await a.close()
        await b.close()


async def test_a_suspend_on_replica_a_wakes_the_outbox_of_replica_b(pg_url: str) -> None:
    settings = make_settings(pg_url)
    rt_a = Runtime(settings, clock=FakeClock(), owner="A")
    rt_b = Runtime(settings, clock=FakeClock(), owner="B")
    rt_b.outbox.poll_interval = 60.0  # without a wake-up, B would not look again for a minute
    await rt_a.start(background=False)
    await rt_b.start(background=True)
    try:
        await asyncio.sleep(0.2)  # B's first (empty) round is done; it now waits
        approval, _ = await rt_a.service.suspend(SuspendRequest(run_id="r", step="s", title="t"))
        start = time.perf_counter()
        while (card := await rt_a.store.get_card(approval.id, "web")) is None:
            assert time.perf_counter() - start < 3, "replica B was not woken"
            await asyncio.sleep(0.01)
        assert card.status is DeliveryStatus.DONE
        (post,) = await rt_a.store.list_outbox(approval.id)
        assert post.status is DeliveryStatus.DONE
    finally:
        await rt_a.stop()
        await rt_b.stop()


async def _heard(got: asyncio.Queue[tuple[str, str, float]], within: float) -> set[str]:
    """The topics heard within `within` seconds (until the first one, if any)."""
    with contextlib.suppress(TimeoutError):
        return {(await asyncio.wait_for(got.get(), within))[0]}
    return set()


async def test_a_replica_alone_notifies_nobody_until_another_is_seen(pg_url: str) -> None:
    """A claiming replica whose heartbeat saw no other live replica sends no NOTIFY (nobody
    would act on it); from the heartbeat that sees another one, it does again, and a replica
    that stopped is not notified past the next heartbeat."""
    a, b = open_store(pg_url), open_store(pg_url)
    await a.open()
    await b.open()
    got: asyncio.Queue[tuple[str, str, float]] = asyncio.Queue()
    sent: list[str] = []
    notifier = a._notifier  # type: ignore[attr-defined]
    send = notifier.send

    def counted(channel: str, payload: str = "") -> None:
        sent.append(channel)
        send(channel, payload)

    notifier.send = counted
    try:
        await b.subscribe(lambda topic, payload: got.put_nowait((topic, payload, time.perf_counter())))
        await a.take_over("A", NOW)  # alone: B listens but claims nothing
        first = make_approval(wake_at=NOW)
        await a.create_approval(first, [], [NewOutbox(first.id, "web", OutboxKind.POST)])
        assert await _heard(got, 0.3) == set() and sent == []

        await b.take_over("B", NOW)
        await a.reap("A", NOW)  # A's next heartbeat (every half second) sees B
        second = make_approval(wake_at=NOW)
        await a.create_approval(second, [], [NewOutbox(second.id, "web", OutboxKind.POST)])
        assert sent and await _heard(got, 2)

        await b.release_claims("B", NOW)  # B stops: unregistered
        await a.reap("A", NOW)
        sent.clear()
        third = make_approval(wake_at=NOW)
        await a.create_approval(third, [], [NewOutbox(third.id, "web", OutboxKind.POST)])
        assert sent == []
    finally:
        await a.close()
        await b.close()
