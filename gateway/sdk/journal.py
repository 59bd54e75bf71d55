"""The journal in the gateway's store, opened directly (same DB URL): for agents on the gateway's
machine. It needs the server's store, so it lives here and not in the agent SDK (`hitl_sdk`)."""

from __future__ import annotations

from hitl_sdk.models import StepRecord

from gateway.core.principals import NO_AGENT
from gateway.store import Store, open_store

__all__ = ["StoreJournal"]


class StoreJournal:
    """For agents on the gateway's machine: the store opened by its URL. Its runs are those of
    `namespace`: no agent's by default, like the approvals of an in-process caller; an agent's
    identity (`agent:NAME`) to share that agent's runs."""

    def __init__(self, store: Store, *, owned: bool = False, namespace: str = NO_AGENT) -> None:
        self.store, self._owned, self.namespace = store, owned, namespace

    @classmethod
    async def open(cls, db_url: str, *, namespace: str = NO_AGENT) -> StoreJournal:
        store = open_store(db_url)
        await store.open()
        return cls(store, owned=True, namespace=namespace)

    async def load(self, run_id: str) -> dict[str, StepRecord]:
        return {s.name: s for s in await self.store.get_steps(run_id, namespace=self.namespace)}

    async def record(self, step: StepRecord) -> StepRecord:
        return await self.store.record_step(step, namespace=self.namespace)

    async def close(self) -> None:
        if self._owned:
            await self.store.close()
