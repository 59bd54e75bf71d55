"""Group commit for writes that finish together: each caller awaits its own write, and the
writes that arrive while one commit is in flight go together in the next, one transaction for
many (the outbox's results and post markers of a claimed batch, which its deliveries finish at
about the same time).

A caller's await returns once its own write is committed, or raises what the commit raised: a
write is as durable when its caller goes on as it was when each write was its own transaction.
A caller cancelled while it waits does not cancel the commit (the others in it still want it)."""

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
                results = await self._commit([item for item, _ in batch])
            except BaseException as exc:  # each caller learns it failed (and retries as it would)
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise
                continue
            for (_, fut), result in zip(batch, results, strict=True):
                if not fut.done():
                    fut.set_result(result)
