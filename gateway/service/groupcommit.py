"""Group commit for writes that finish together: each caller awaits its own write, and the
writes that arrive while one commit is in flight go together in the next, one transaction for
many (the outbox's results and post markers of a claimed batch, which its deliveries finish at
about the same time).

A caller's await returns once its own write is committed, or raises what the commit raised: a
write is as durable when its caller goes on as it was when each write was its own transaction.
A caller cancelled while it waits does not cancel the commit (the others in it still want it).
When a commit of many fails, each is committed again on its own, so one bad write fails only its
own caller; and no caller is left waiting, whatever the commit does (a wrong count of results)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["GroupCommit"]

T = TypeVar("T")
R = TypeVar("R")


class GroupCommit(Generic[T, R]):
    """`commit(items)` writes many items in one transaction and returns one result per item."""

    def __init__(self, commit: Callable[[Sequence[T]], Awaitable[Sequence[R]]]) -> None:
        self._commit = commit
        self._queue: list[tuple[T, asyncio.Future[R]]] = []
        self._task: asyncio.Task[None] | None = None

    async def submit(self, item: T) -> R:
        fut: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._queue.append((item, fut))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="group-commit")
        return await fut

    async def _run(self) -> None:
        while self._queue:
            batch, self._queue = self._queue, []
            try:
                await self._settle(batch)
            finally:
                # Whatever escaped (a cancellation, a bug): no caller of this batch waits forever.
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(RuntimeError("the group commit stopped before this write finished"))

    async def _settle(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        try:
            results = await self._commit([item for item, _ in batch])
        except Exception as exc:
            if len(batch) == 1:  # each caller learns it failed (and retries as it would)
                _fail(batch, exc)
                return
            # One bad item must not fail the others: nothing of the failed transaction was
            # committed, so each item is committed alone and its caller gets its own outcome.
            for one in batch:
                await self._settle([one])
            return
        except BaseException as exc:
            _fail(batch, exc)
            raise
        if len(results) != len(batch):  # checked before any caller is told it committed
            _fail(batch, RuntimeError(f"group commit returned {len(results)} results for {len(batch)} items"))
            return
        for (_, fut), result in zip(batch, results, strict=True):
            if not fut.done():
                fut.set_result(result)


def _fail(batch: Sequence[tuple[object, asyncio.Future[R]]], exc: BaseException) -> None:
    for _, fut in batch:
        if not fut.done():
            fut.set_exception(exc)
