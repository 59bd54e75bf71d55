"""Small helpers shared by tests (not fixtures)."""

from __future__ import annotations

from typing import Any

from gateway.runtime import Runtime


async def table_counts(rt: Runtime) -> dict[str, Any]:
    """A snapshot of everything a request could change, to assert that it changed nothing."""
    store = rt.store
    approvals = await store.list_approvals(limit=10_000)
    events = {a.id: len(await store.list_events(a.id)) for a in approvals}
    outbox = {a.id: len(await store.list_outbox(a.id)) for a in approvals}
    return {
        "approvals": sorted((a.id, a.status.value, a.version) for a in approvals),
        "events": events,
        "outbox": outbox,
        "jobs": len(await store.list_jobs(limit=10_000)),
    }
