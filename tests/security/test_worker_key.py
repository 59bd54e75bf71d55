"""The worker's idempotency key (`HITL_IDEMPOTENCY_KEY`), against a real `serve`: the agent knows
everything public about its approval (id, run, step, args and their hash, its resume token), yet
cannot compute the key its worker will send downstream, so it cannot use the key first (a payment
API would then de-duplicate the approved charge into the agent's own); the key leaks neither the
token nor the secret, and no API view shows it."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from pathlib import Path

import aiohttp
import pytest

from gateway.core.effects import effect_key
from gateway.core.keys import args_hash, canonical_json, idempotency_key
from tests.security.conftest import ALICE, BILLING, SECRET, Launch, call, suspend_body

pytestmark = pytest.mark.subprocess  # every test here starts a process

FAKES = Path(__file__).parents[1] / "fakes"


async def _launched(out: Path, approval_id: str, within: float = 15.0) -> dict[str, dict[str, str]]:
    """What the recording worker saw (env and document) on its first launch."""
    path = out / f"{approval_id}.0.json"
    for _ in range(int(within / 0.05)):
        if path.exists():
            try:
                return json.loads(path.read_text())  # type: ignore[no-any-return]
            except ValueError:  # being written
                pass
        await asyncio.sleep(0.05)
    raise AssertionError("the worker was not launched")


async def test_the_agent_cannot_derive_its_workers_key_and_no_view_shows_it(launch: Launch, tmp_path: Path) -> None:
    out = tmp_path / "launches"
    out.mkdir()
    command = json.dumps([sys.executable, str(FAKES / "worker_cmd.py"), "ok", str(out)])
    gw = launch(extra=f"[workers.recorder]\ncommand = {command}\n")
    body = suspend_body("inv-key", worker="recorder")
    async with aiohttp.ClientSession() as http:
        status, suspended = await call(http, "POST", f"{gw.url}/v1/suspend", json=body, headers=BILLING)
        assert status == 201, suspended
        aid, token = suspended["id"], suspended["resume_token"]
        decision = {"outcome": "approve"}
        status, _ = await call(http, "POST", f"{gw.url}/v1/approvals/{aid}/decision", json=decision, headers=ALICE)
        assert status == 200
        seen = await _launched(out, aid)
        key = seen["env"]["HITL_IDEMPOTENCY_KEY"]
        assert seen["doc"]["idempotency_key"] == key
        views = [
            await call(http, "GET", f"{gw.url}/v1/approvals/{aid}", headers=BILLING),
            await call(http, "GET", f"{gw.url}/v1/approvals/{aid}/events", headers=BILLING),
            await call(http, "GET", f"{gw.url}/v1/resume/{token}"),
            await call(http, "POST", f"{gw.url}/v1/suspend", json=body, headers=BILLING),  # a replay
        ]
    for status, view in views:
        assert status in (200, 201) and key not in json.dumps(view)
    # Everything the agent knows, and every hash of it a gateway might have used: none is the key.
    hashed = args_hash(body["args"])
    public = [aid, body["run_id"], body["step"], hashed, canonical_json(body["args"]), token]
    guesses = {idempotency_key(body["run_id"], body["step"], body["args"])}
    guesses |= {hashlib.sha256(":".join(public[:n]).encode()).hexdigest() for n in range(1, len(public) + 1)}
    guesses |= {hashlib.sha256(f"{aid}:{body['step']}:{hashed}".encode()).hexdigest()}
    assert key.removeprefix("hitl_") not in guesses
    assert token not in key and key.removeprefix("hitl_") not in token and SECRET not in key
    # It is the MAC under the gateway's secret: another secret gives another key.
    assert effect_key((SECRET,), aid, body["step"], hashed) == key
    assert effect_key(("another-secret-key-0123456789abcdef",), aid, body["step"], hashed) != key
