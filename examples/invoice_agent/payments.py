"""A fake payment API for the invoice example: POST /charges, de-duplicated by Idempotency-Key.

python -m examples.invoice_agent.payments [--port 8099]

It listens on the port of $HITL_PAYMENTS_URL (default http://127.0.0.1:8099, examples/addresses.py),
where the example agents and their workers charge; `--port` overrides it.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
from typing import Any

from aiohttp import web

from examples.addresses import payments_port


class PaymentsAPI:
    """Counts every request, and charges once per Idempotency-Key (a replay gets the same charge)."""

    def __init__(self, latency: float = 0.0) -> None:
        self.latency = latency  # seconds spent "talking to the bank" after recording the charge
        self.charges: dict[str, dict[str, Any]] = {}
        self.requests = 0
        self._ids = itertools.count(1)

    async def charge(self, request: web.Request) -> web.Response:
        self.requests += 1
        key = request.headers.get("Idempotency-Key")
        if not key:
            return web.json_response({"error": "Idempotency-Key is required"}, status=400)
        body = await request.json()
        if key not in self.charges:
            self.charges[key] = {"id": f"ch_{next(self._ids)}", "amount": body["amount"], "run_id": body["run_id"]}
        await asyncio.sleep(self.latency)
        return web.json_response(self.charges[key], status=201)

    async def list_charges(self, request: web.Request) -> web.Response:
        return web.json_response({"charges": list(self.charges.values()), "requests": self.requests})

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/charges", self.charge)
        app.router.add_get("/charges", self.list_charges)
        return app


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=payments_port())
    web.run_app(PaymentsAPI().app(), host="127.0.0.1", port=parser.parse_args().port)
