"""The effects API of `make chaos`, served by the soak itself (it outlives every gateway): it
counts how often each approval's effect was applied, for the two bare workers of
bench/effect_worker.py. A request with an `Idempotency-Key` is applied once per key, as a payment
API does; one without is applied every time. A key that changed between launches would show as a
second effect too: it counts effects per approval, not per key."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from aiohttp import web


@dataclass
class EffectsAPI:
    applied: dict[str, Counter[str]] = field(default_factory=lambda: {"bare": Counter(), "keyed": Counter()})
    keys: dict[str, str] = field(default_factory=dict)  # Idempotency-Key -> approval id
    requests: Counter[str] = field(default_factory=Counter)

    async def effect(self, request: web.Request) -> web.Response:
        body = await request.json()
        worker, approval = str(body["worker"]), str(body["approval_id"])
        self.requests[worker] += 1
        key = request.headers.get("Idempotency-Key")
        if key is None or key not in self.keys:
            if key is not None:
                self.keys[key] = approval
            self.applied[worker][approval] += 1
        return web.json_response({"ok": True})

    def twice(self, worker: str) -> int:
        """Approvals whose effect was applied more than once."""
        return sum(1 for n in self.applied[worker].values() if n > 1)

    def line(self, worker: str) -> str:
        applied = self.applied[worker]
        return f"{self.twice(worker)} of {len(applied)} approvals ({self.requests[worker]} requests)"

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/effects", self.effect)
        return app
