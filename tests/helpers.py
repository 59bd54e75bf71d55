"""Small helpers shared by tests (not fixtures)."""

from __future__ import annotations

import shutil
from pathlib import Path
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


class CommitDiesOnce:
    """The store's next decision commit fails as if the process died in it (nothing of that
    transaction is written); the ones after commit as usual. `died`: whether it happened."""

    def __init__(self, rt: Runtime) -> None:
        self.died = False
        self._store = rt.store
        self._save = rt.store.save_transition
        rt.store.save_transition = self._once  # type: ignore[method-assign]

    async def _once(self, *args: Any, **kwargs: Any) -> bool:
        if not self.died:
            self.died = True
            raise ConnectionError("the process died here")
        return await self._save(*args, **kwargs)


ROOT = Path(__file__).resolve().parents[1]


def source_copy(dst: Path) -> Path:
    """The server's sources (pyproject, README, gateway, adapters) copied to `dst`, to build a
    distribution from: a build writes build/ and *.egg-info next to its sources, which must not
    land in the checkout (an egg-info there makes `hitl-gateway` look installed to any interpreter
    run with the checkout on its path)."""
    dst.mkdir(parents=True, exist_ok=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(ROOT / name, dst / name)
    for package in ("gateway", "adapters"):
        shutil.copytree(ROOT / package, dst / package, ignore=shutil.ignore_patterns("__pycache__"))
    return dst
