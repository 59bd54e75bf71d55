"""Where a DurableRun keeps its journal: the gateway's store, directly (same DB URL) or over HTTP."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from gateway.core.clock import iso
from gateway.core.models import StepRecord, StepStatus
from gateway.sdk.client import GatewayClient
from gateway.store import Store, open_store


class Journal(Protocol):
    """Where a run's steps are journaled (StoreJournal or HttpJournal)."""

    async def load(self, run_id: str) -> dict[str, StepRecord]:
        """The run's journaled steps by name."""
        ...

    async def record(self, step: StepRecord) -> StepRecord:
        """Journal a step; the first successful record wins and is returned."""
        ...

    async def close(self) -> None: ...


class StoreJournal:
    """For agents on the gateway's machine: the store opened by its URL."""

    def __init__(self, store: Store, *, owned: bool = False) -> None:
        self.store, self._owned = store, owned

    @classmethod
    async def open(cls, db_url: str) -> StoreJournal:
        store = open_store(db_url)
        await store.open()
        return cls(store, owned=True)

    async def load(self, run_id: str) -> dict[str, StepRecord]:
        return {s.name: s for s in await self.store.get_steps(run_id)}

    async def record(self, step: StepRecord) -> StepRecord:
        return await self.store.record_step(step)

    async def close(self) -> None:
        if self._owned:
            await self.store.close()


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def step_from_api(data: dict[str, Any]) -> StepRecord:
    return StepRecord(
        run_id=data["run_id"],
        name=data["name"],
        status=StepStatus(data["status"]),
        output=data.get("output"),
        attempts=int(data["attempts"]),
        started_at=_time(data["started_at"]),
        finished_at=_time(data["finished_at"]),
        error=data.get("error"),
    )


class HttpJournal:
    """For remote agents and workers: `/v1/runs/{run_id}/steps` with an API key or resume token."""

    def __init__(self, client: GatewayClient) -> None:
        self.client = client

    async def load(self, run_id: str) -> dict[str, StepRecord]:
        return {s["name"]: step_from_api(s) for s in await self.client.steps(run_id)}

    async def record(self, step: StepRecord) -> StepRecord:
        body = {
            "status": step.status.value,
            "output": step.output,
            "attempts": step.attempts,
            "started_at": iso(step.started_at),
            "finished_at": iso(step.finished_at),
            "error": step.error,
        }
        return step_from_api(await self.client.record_step(step.run_id, step.name, body))

    async def close(self) -> None:
        return None
