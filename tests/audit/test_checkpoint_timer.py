"""The audit loop seals once every `[audit] checkpoint_every`, however busy the database is (both
backends). Its rounds ran back to back while they found heads that had moved: under a steady
load (another replica's, or this gateway's own after its first minute) every round does, and the
two-replica chaos soak on PostgreSQL wrote 330 checkpoints in 97 s instead of about two."""

from __future__ import annotations

import asyncio

from gateway.core.audit import Checkpoint
from gateway.runtime import Runtime
from gateway.service.approvals import SuspendRequest
from gateway.testing import FakeClock

WATCH = 0.5  # seconds of real time after the first round: dozens of rounds when they ran back to back


async def test_the_audit_loop_waits_checkpoint_every_between_rounds_under_load(
    runtime: Runtime, clock: FakeClock
) -> None:
    made: list[Checkpoint] = []
    sealed = asyncio.Event()
    seal = runtime.audit.checkpoint
    rounds = iter(range(1_000_000))

    async def busy(*, force: bool = False) -> Checkpoint | None:
        # as under load: an approval's head moved since the last round, every round
        req = SuspendRequest(run_id=f"load-{next(rounds)}", step="charge", title="Charge", args={}, worker="agent")
        await runtime.service.suspend(req)
        clock.advance(1)
        checkpoint = await seal(force=force)
        if checkpoint is not None:
            made.append(checkpoint)
            sealed.set()
        return checkpoint

    runtime.audit.checkpoint = busy  # type: ignore[method-assign]
    loop = asyncio.create_task(runtime.audit.run_forever())
    try:
        await asyncio.wait_for(sealed.wait(), 30)  # the first round seals what moved
        await asyncio.sleep(WATCH)  # far less than checkpoint_every (1 minute)
        assert len(made) == 1, f"{len(made)} checkpoints within {WATCH} s of each other"
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
