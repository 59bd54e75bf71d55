"""Where a DurableRun keeps its journal. `HttpJournal`: the gateway's `/v1/runs/{run_id}/steps`,
opened by an API key or by the resume token of one of the run's approvals (what a worker gets).

The gateway's own package adds `gateway.sdk.StoreJournal`, which opens the store directly (same
DB URL), for agents on the gateway's machine.
"""

from __future__ import annotations

from typing import Protocol

from hitl_sdk.client import GatewayClient
from hitl_sdk.models import StepRecord
from hitl_sdk.times import iso

__all__ = ["HttpJournal", "Journal"]


class Journal(Protocol):
    """Where a run's steps are journaled (HttpJournal, or the server's StoreJournal)."""

    async def load(self, run_id: str) -> dict[str, StepRecord]:
        """The run's journaled steps by name."""
        ...

    async def record(self, step: StepRecord) -> StepRecord:
        """Journal a step; the first successful record wins and is returned."""
        ...

    async def close(self) -> None: ...


class HttpJournal:
    """For remote agents and workers: `/v1/runs/{run_id}/steps` with an API key or resume token."""

    def __init__(self, client: GatewayClient) -> None:
        self.client = client

    async def load(self, run_id: str) -> dict[str, StepRecord]:
        return {s["name"]: StepRecord.from_api(s) for s in await self.client.steps(run_id)}

    async def record(self, step: StepRecord) -> StepRecord:
        body = {
            "status": step.status.value,
            "output": step.output,
            "attempts": step.attempts,
            "started_at": iso(step.started_at),
            "finished_at": iso(step.finished_at),
            "error": step.error,
        }
        return StepRecord.from_api(await self.client.record_step(step.run_id, step.name, body))

    async def close(self) -> None:
        return None
