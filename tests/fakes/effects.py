"""A `url` worker's receiver for multi-replica tests: it applies ONE effect per idempotency key
(the approval id), however often the gateway launches it, as a payment API does with its
`Idempotency-Key`.

Every launch is counted (`launches`); the first launch of a key applies the effect and records
what the rehydration document said (`applied`: status, outcome, who decided), a later one is a
replay (`replays`) and changes nothing. The reply is held for `delay` seconds, so that launches
are in flight when a replica is killed. Runs in `fail_first` (run ids) get a 503 on their first
launch, after the effect was applied (the reply was lost): the retry must not apply it again.
A bad X-HITL-Signature gets a 401 (a terminal failure the test would see).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from gateway.jobs.launch import verify
from tests.fakes.server import serve_local


@dataclass(frozen=True)
class Effect:
    status: str
    outcome: str
    decided_by: str


@dataclass
class FakeEffects:
    secret: str
    delay: float = 0.0
    fail_first: frozenset[str] = frozenset()
    launches: Counter[str] = field(default_factory=Counter)
    applied: dict[str, Effect] = field(default_factory=dict)
    replays: Counter[str] = field(default_factory=Counter)
    in_flight: dict[int, tuple[str, float]] = field(default_factory=dict)  # launch -> (key, started)
    bad_signatures: int = 0
    url: str = ""
    _runner: web.AppRunner | None = None

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        if not verify(request.headers.get("X-HITL-Signature", ""), body, self.secret, time.time()):
            self.bad_signatures += 1
            return web.json_response({"error": "bad signature"}, status=401)
        doc: dict[str, Any] = json.loads(body)
        key = request.headers["X-HITL-Approval-Id"]
        assert doc["approval"]["id"] == key
        self.launches[key] += 1
        launch = sum(self.launches.values())
        self.in_flight[launch] = (key, time.monotonic())
        try:
            if key in self.applied:  # idempotent: one effect per key
                self.replays[key] += 1
            else:
                decision = doc["decision"] or {}
                self.applied[key] = Effect(doc["status"], decision.get("outcome", ""), decision.get("decided_by", ""))
            await asyncio.sleep(self.delay)
        finally:
            del self.in_flight[launch]
        if doc["run_id"] in self.fail_first and self.launches[key] == 1:
            return web.json_response({"error": "try again"}, status=503)
        return web.json_response({"ok": True})

    def in_flight_ids(self, younger_than: float) -> set[str]:
        """Keys with a launch in flight that started less than `younger_than` seconds ago."""
        now = time.monotonic()
        return {key for key, started in self.in_flight.values() if now - started < younger_than}

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/effect", self.handle)
        self._runner, root = await serve_local(app)
        self.url = f"{root}/effect"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
