"""The `entrypoint` worker of bench b/c and of `make chaos`: imported once per pool process.

`step(document)` notes `time.time()` as its very first line (c: decision -> worker start), then
runs one journaled SDK step, then tells the bench over UDP: `approval_id t_start t_done`.

The journal is the documented worker path (`DurableRun.from_env`): in a gateway's pool process,
the socket the gateway gave it (no HTTP request per step); the run starts from the document's
journal (no GET). The charge of the chaos soak goes over one aiohttp session kept for the life of
the pool process (the pool runs every request on the same event loop).

With `state["pay"]` (the chaos soak) the step charges the fake payment API with the SDK's
idempotency key and journals the charge id: a worker killed between the charge and its journal
entry charges again with the same key on replay, and the API must de-duplicate it.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

import aiohttp

from gateway.sdk import DurableRun

_udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
_session: aiohttp.ClientSession | None = None


async def _charge(url: str, key: str, amount: int, run_id: str) -> str:
    assert _session is not None
    body = {"amount": amount, "run_id": run_id}
    async with _session.post(f"{url}/charges", json=body, headers={"Idempotency-Key": key}) as resp:
        resp.raise_for_status()
        return str((await resp.json())["id"])


def _work(args: dict[str, Any]) -> dict[str, Any]:
    return {"done": True, "n": args.get("n")}


async def step(doc: dict[str, Any]) -> None:
    started = time.time()
    global _session
    state = doc.get("state") or {}
    run = await DurableRun.from_env(document=doc)  # the documented worker path: the pool's journal socket
    try:
        if state.get("pay") and doc["status"] == "approved":
            if _session is None:  # the chaos soak's payment API only (kept for the process's life)
                _session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
            key = run.idempotency_key("charge", doc["args"])
            await run.step("charge", _charge, state["pay"], key, int(doc["args"].get("amount", 1)), doc["run_id"])
        else:
            await run.step("work", _work, doc["args"])
    finally:
        await run.close()
    port = state.get("port")
    if port:
        message = f"{os.environ['HITL_APPROVAL_ID']} {started:.6f} {time.time():.6f}"
        _udp.sendto(message.encode(), ("127.0.0.1", int(port)))
