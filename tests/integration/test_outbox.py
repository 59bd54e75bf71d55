"""The outbox against a scripted channel: retries, server delays, terminal failures, ordering."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiohttp import web

from gateway.core.channels import Attempt, DeliveryError, OutgoingCard
from gateway.core.models import Approval, Outcome
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.service.commands import Authority


class ScriptedChannel:
    """A channel whose next results are scripted: a value to return or a DeliveryError to raise."""

    kind = "web"
    resend_unknown = False
    posts_in_flight = None

    def __init__(self) -> None:
        self.script: list[DeliveryError | None] = []
        self.calls: list[tuple[str, str, str]] = []

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def _next(self) -> None:
        if self.script:
            err = self.script.pop(0)
            if err is not None:
                raise err

    async def post_card(self, card: OutgoingCard, attempts: Sequence[Attempt]) -> str:
        self.calls.append(("post", card.approval.id, card.approval.status.value))
        self._next()
        return f"msg-{card.approval.id}"

    async def update_card(self, card: OutgoingCard) -> None:
        self.calls.append(("update", card.ref or "", card.approval.status.value))
        self._next()

    async def send_reminder(self, card: OutgoingCard) -> None:
        self.calls.append(("remind", card.ref or "", card.approval.status.value))

    def routes(self) -> Sequence[web.AbstractRouteDef]:
        return ()


def scripted(runtime: Runtime) -> ScriptedChannel:
    channel = ScriptedChannel()
    runtime.channels["web"] = channel
    runtime.outbox.channels = runtime.channels
    return channel


async def _suspend(runtime: Runtime) -> Approval:
    approval, _ = await runtime.service.suspend(SuspendRequest(run_id="r", step="s", title="t"))
    return approval


async def test_transient_errors_retry_after_the_servers_delay(runtime: Runtime, clock: Any) -> None:
    channel = scripted(runtime)
    channel.script = [
        DeliveryError("429", transient=True, retry_after=7),
        DeliveryError("429", transient=True, retry_after=7),
        None,
    ]
    a = await _suspend(runtime)
    assert await runtime.outbox.run_once() == 1
    clock.advance(6.9)
    assert await runtime.outbox.run_once() == 0  # not before the server said
    clock.advance(0.1)
    assert await runtime.outbox.run_once() == 1
    clock.advance(7)
    assert await runtime.outbox.run_once() == 1
    cards = await runtime.store.list_cards(a.id)
    assert [(c.ref, c.status.value) for c in cards] == [(f"msg-{a.id}", "done")]
    kinds = [e.kind for e in await runtime.store.list_events(a.id)]
    assert kinds.count("delivery_retry") == 2 and kinds.count("card_posted") == 1
    assert [c[0] for c in channel.calls] == ["post", "post", "post"]


async def test_terminal_error_is_recorded_and_visible(runtime: Runtime) -> None:
    channel = scripted(runtime)
    channel.script = [DeliveryError("bot was removed", transient=False)]
    a = await _suspend(runtime)
    await runtime.outbox.drain()
    [card] = await runtime.store.list_cards(a.id)
    assert card.status.value == "failed" and card.error == "bot was removed"
    [row] = await runtime.store.list_outbox(a.id)
    assert row.status.value == "failed"
    assert "delivery_failed" in [e.kind for e in await runtime.store.list_events(a.id)]


async def test_sync_after_decision_renders_the_outcome_once_posted(runtime: Runtime) -> None:
    channel = scripted(runtime)
    a = await _suspend(runtime)
    # decided before the card went out: the post renders the outcome, the sync edits it again
    await runtime.service.decide(a.id, Outcome.APPROVE, "operator:ops", authority=Authority.OPERATOR)
    await runtime.outbox.drain()
    assert [c[0] for c in channel.calls] == ["post", "update"]
    assert channel.calls[-1][2] == "approved"


async def test_card_is_never_posted_twice(runtime: Runtime) -> None:
    channel = scripted(runtime)
    a = await _suspend(runtime)
    await runtime.outbox.drain()
    # a second post for the same approval and channel is refused by the store (unique post row)
    from gateway.core.models import NewOutbox, OutboxKind

    await runtime.store.enqueue_outbox([NewOutbox(a.id, "web", OutboxKind.POST)], runtime.clock.now())
    await runtime.outbox.drain()
    assert [c[0] for c in channel.calls] == ["post"]


async def test_a_delivery_slower_than_half_its_lease_is_cut_and_retried(runtime: Runtime) -> None:
    """Recorded before the lease runs out, so no other replica claims and posts it again."""
    import asyncio
    import time
    from datetime import timedelta

    channel = scripted(runtime)
    stuck = asyncio.Event()

    async def slow_post(card: OutgoingCard, attempts: Sequence[Attempt]) -> str:
        channel.calls.append(("post", card.approval.id, card.approval.status.value))
        await stuck.wait()  # a platform that never answers
        return "never"

    channel.post_card = slow_post  # type: ignore[method-assign]
    runtime.outbox.lease = timedelta(seconds=0.4)
    a = await _suspend(runtime)
    started = time.monotonic()
    assert await runtime.outbox.run_once() == 1
    assert time.monotonic() - started < 0.39  # cut at half the lease, recorded before it ends
    [row] = await runtime.store.list_outbox(a.id)
    assert row.status.value == "pending" and row.last_error == "delivery timed out" and row.attempts == 1
    assert await runtime.store.list_cards(a.id) == []
    assert "delivery_retry" in [e.kind for e in await runtime.store.list_events(a.id)]


async def test_deliveries_that_finish_together_commit_together(runtime: Runtime) -> None:
    """Eight posts claimed together: each reads its approval, card and events in one snapshot;
    once all have read (held until then, so that they go on together), their `post_attempt`
    markers commit in a few transactions, and their results too, each before its delivery went
    on: not five store calls per post."""
    import asyncio
    from collections import Counter

    channel = scripted(runtime)
    requests = [SuspendRequest(run_id="r", step=f"s{i}", title="t") for i in range(8)]
    approvals = [(await runtime.service.suspend(r))[0] for r in requests]
    calls = Counter[str]()
    store = runtime.store
    all_read = asyncio.Event()
    for name in ("approval_views", "get_approval", "get_card", "list_events", "append_events", "finish_outboxes"):
        method = getattr(store, name)

        async def counted(*args: Any, _name: str = name, _method: Any = method, **kwargs: Any) -> Any:
            calls[_name] += 1
            result = await _method(*args, **kwargs)
            if _name == "approval_views":
                if calls[_name] == len(approvals):
                    all_read.set()
                await all_read.wait()
            return result

        setattr(store, name, counted)

    assert await runtime.outbox.run_once() == 8

    assert len(channel.calls) == 8
    assert set(calls) == {"approval_views", "append_events", "finish_outboxes"} and calls["approval_views"] == 8
    # the first to go on commits alone, the others join the next commit (or the one after)
    assert calls["append_events"] < 8 and calls["finish_outboxes"] < 8
    for a in approvals:
        kinds = [e.kind for e in await runtime.store.list_events(a.id)]
        assert kinds.count("post_attempt") == 1 and kinds.count("card_posted") == 1
        [card] = await runtime.store.list_cards(a.id)
        assert card.ref == f"msg-{a.id}"


async def test_a_group_commit_gives_each_caller_its_result_or_the_commits_error() -> None:
    import asyncio

    from gateway.service.groupcommit import GroupCommit

    batches: list[list[int]] = []

    async def commit(items: Sequence[int]) -> list[int]:
        batches.append(list(items))
        await asyncio.sleep(0)
        if 13 in items:
            raise ValueError("the transaction failed")
        return [i * 2 for i in items]

    group = GroupCommit(commit)
    assert await asyncio.gather(*(group.submit(i) for i in range(5))) == [0, 2, 4, 6, 8]
    assert batches == [[0, 1, 2, 3, 4]]  # one commit for what arrived together
    outcomes = await asyncio.gather(group.submit(13), group.submit(1), return_exceptions=True)
    assert type(outcomes[0]) is ValueError and outcomes[1] == 2  # the others are committed on their own
    assert batches[1:] == [[13, 1], [13], [1]]
    assert await group.submit(3) == 6  # the next commit goes on


async def test_results_recorded_together_commit_in_one_transaction(runtime: Runtime) -> None:
    import asyncio

    from gateway.core.models import DeliveryStatus

    scripted(runtime)
    requests = [SuspendRequest(run_id="r", step=f"s{i}", title="t") for i in range(8)]
    for r in requests:
        await runtime.service.suspend(r)
    store, now = runtime.store, runtime.clock.now()
    items = await store.claim_outbox(now, "me", runtime.outbox.lease, 10)
    batches: list[int] = []
    finish = store.finish_outboxes

    async def counted(results: Any) -> list[bool]:
        batches.append(len(results))
        return await finish(results)

    store.finish_outboxes = counted  # type: ignore[method-assign]
    deliveries = runtime.outbox.deliveries
    done = await asyncio.gather(
        *(deliveries.finish(i.id, "me", now=now, status=DeliveryStatus.DONE) for i in items),
        deliveries.finish(items[0].id, "someone else", now=now, status=DeliveryStatus.DONE),
    )
    assert batches == [9] and done == [True] * 8 + [False]
