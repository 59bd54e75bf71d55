"""GroupCommit (gateway.service.groupcommit): one bad write fails only its own caller, and no
caller is left waiting whatever the commit does."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from gateway.service.groupcommit import GroupCommit


async def test_one_failing_item_fails_only_its_own_caller() -> None:
    batches: list[list[int]] = []

    async def commit(items: Sequence[int]) -> list[int]:
        batches.append(list(items))
        await asyncio.sleep(0)
        if 7 in items:
            raise ValueError("item 7 violates a constraint")
        return [i * 10 for i in items]

    group = GroupCommit(commit)
    outcomes = await asyncio.gather(*(group.submit(i) for i in (1, 7, 3)), return_exceptions=True)
    assert outcomes[0] == 10 and outcomes[2] == 30
    assert isinstance(outcomes[1], ValueError)
    assert batches == [[1, 7, 3], [1], [7], [3]]  # the batch, then each item alone


async def test_a_wrong_count_of_results_fails_every_caller() -> None:
    async def commit(items: Sequence[int]) -> list[int]:
        await asyncio.sleep(0)
        return [i for i in items][:-1]  # one result too few

    group = GroupCommit(commit)
    tasks = [asyncio.create_task(group.submit(i)) for i in range(3)]
    done, pending = await asyncio.wait(tasks, timeout=1)
    assert not pending  # none left waiting forever
    for task in done:
        with pytest.raises(RuntimeError, match="results"):
            task.result()


async def test_a_commit_that_escapes_leaves_no_caller_waiting() -> None:
    class Stop(BaseException):
        pass

    async def commit(items: Sequence[int]) -> list[int]:
        await asyncio.sleep(0)
        raise Stop

    group = GroupCommit(commit)
    tasks = [asyncio.create_task(group.submit(i)) for i in range(3)]
    done, pending = await asyncio.wait(tasks, timeout=1)
    assert not pending
    assert all(isinstance(t.exception(), Stop) for t in done)
