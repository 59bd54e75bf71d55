"""The store's own upkeep, for the command line: `hitl-gateway migrate` (opening the store
applies the pending migrations; this reports where the schema stands)."""

from __future__ import annotations

from gateway.store import Store

__all__ = ["Maintenance"]


class Maintenance:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def schema_version(self) -> int:
        return await self.store.schema_version()
