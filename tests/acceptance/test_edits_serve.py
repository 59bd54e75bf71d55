"""Approve with changes and extend against a real `hitl-gateway serve` process: the API, a real
command worker, the fake Telegram and Slack APIs, and Slack's Edit & approve modal."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from adapters.slack.parse import make_ref
from gateway.core.tokens import TokenSigner
from gateway.testing import TEST_SECRET
from tests.fakes.slack_api import BOT_TOKEN, SIGNING_SECRET, FakeSlack, block_actions, edit_submission, signed
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.procs import AUTH, OPERATOR, Gateway, free_port, write_config
from tests.slack.conftest import CARDS, PATH
from tests.slack.conftest import fake_slack as fake_slack  # the fake Slack, on loopback
from tests.telegram.conftest import CHAT, SECRET, TOKEN
from tests.telegram.conftest import tg_api as tg_api  # the fake Telegram, on loopback

pytestmark = pytest.mark.subprocess
FAKES = Path(__file__).parents[1] / "fakes"
SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "integer", "minimum": 1, "maximum": 5000}, "email": {"type": "string"}},
    "required": ["amount"],
}
ARGS = {"amount": 4200, "currency": "EUR", "email": "billing@acme.test"}
CHANGED = "approved with changes by operator:test: amount 4200 → 3900"


class Serve:
    def __init__(self, gw: Gateway, http: aiohttp.ClientSession, out: Path) -> None:
        self.gw, self.http, self.out = gw, http, out

    async def call(self, method: str, path: str, body: Any = None, headers: Any = OPERATOR) -> tuple[int, Any]:
        async with self.http.request(method, self.gw.url + path, json=body, headers=headers) as r:
            return r.status, await r.json(content_type=None)

    async def suspend(self, run_id: str) -> dict[str, Any]:
        body = {
            "run_id": run_id,
            "step": "charge",
            "title": "Charge ACME",
            "args": ARGS,
            "args_schema": SCHEMA,
            "editable": ["amount"],
            "channels": [f"telegram:{CHAT}", f"slack:{CARDS}"],
            "worker": "pay",
            "policy": "pay",
        }
        status, created = await self.call("POST", "/v1/suspend", body, AUTH)
        assert status == 201, created
        return dict(created)

    async def trail(self, approval_id: str) -> tuple[int, int]:
        """(version, number of events): what a refused request must leave alone."""
        _, view = await self.call("GET", f"/v1/approvals/{approval_id}")
        _, events = await self.call("GET", f"/v1/approvals/{approval_id}/events")
        return view["version"], len(events["items"])


async def until(probe: Callable[[], Any], within: float = 20.0) -> Any:
    async with asyncio.timeout(within):
        while True:
            if found := probe():
                return found
            await asyncio.sleep(0.05)


@pytest.fixture
async def serve(tmp_path: Path, tg_api: FakeTelegramAPI, fake_slack: FakeSlack) -> AsyncIterator[Serve]:
    port, out = free_port(), tmp_path / "worker"
    out.mkdir()
    worker = json.dumps([sys.executable, str(FAKES / "worker_cmd.py"), "ok", str(out)])
    extra = (
        f'[telegram]\nbot_token = "{TOKEN}"\nwebhook_secret = "{SECRET}"\nbase_url = "{tg_api.base_url}"\n'
        f"approvers = [111]\nchats = [{CHAT}]\n"
        f'[slack]\nbot_token = "{BOT_TOKEN}"\nsigning_secret = "{SIGNING_SECRET}"\nbase_url = "{fake_slack.base_url}"\n'
        f'approvers = ["UALICE"]\nchannels = ["{CARDS}"]\n'
        f'[workers.pay]\ncommand = {worker}\ntimeout = "30s"\n'
        '[policies.pay]\ntimeout = "1h"\nextend = ["1h"]\nmax_extensions = 1\n'
    )
    config = write_config(tmp_path / "gw.toml", f"sqlite:///{tmp_path / 'gw.db'}", port, extra)
    gw = Gateway(config, port, tmp_path / "gw.log")
    await asyncio.to_thread(gw.start)  # it asks the fake Telegram (on this loop) for getMe first
    try:
        async with aiohttp.ClientSession() as http:
            yield Serve(gw, http, out)
    finally:
        gw.stop()


async def test_an_api_edit_runs_the_approved_args_and_every_card_shows_it(
    serve: Serve, tg_api: FakeTelegramAPI, fake_slack: FakeSlack
) -> None:
    a = await serve.suspend("run-1")
    await until(lambda: tg_api.calls_to("sendMessage") and fake_slack.calls_to("chat.postMessage", ok_only=True))
    url = f"/v1/approvals/{a['id']}"
    before = await serve.trail(a["id"])
    status, bad = await serve.call("POST", url + "/decision", {"outcome": "approve", "args": {**ARGS, "amount": 9000}})
    assert status == 400 and bad["error"]["details"]["field"] == "args.amount"
    status, bad = await serve.call(
        "POST", url + "/decision", {"outcome": "approve", "args": {**ARGS, "currency": "USD"}}
    )
    assert status == 400 and bad["error"]["details"]["field"] == "args.currency"
    assert await serve.trail(a["id"]) == before
    # extend: the deadline and the next wake-up move; beyond max_extensions is 403 naming the policy
    status, extended = await serve.call("POST", url + "/extend", {"duration": "1h"})
    assert status == 200 and extended["extensions"] == 1
    assert extended["deadline"] > a["deadline"] and extended["next_wake_at"] == extended["deadline"]
    status, refused = await serve.call("POST", url + "/extend", {"duration": "1h"})
    assert status == 403 and "policy 'pay' allows at most 1 extension" in refused["error"]["message"]
    # the operator approves with the amount lowered; the e-mail comes back as it was shown (redacted)
    _, view = await serve.call("GET", url)
    status, decided = await serve.call(
        "POST", url + "/decision", {"outcome": "approve", "args": {**view["args"], "amount": 3900}}
    )
    assert status == 200 and decided["decision"]["patch"] == [{"op": "replace", "path": "/amount", "value": 3900}]
    record = await until(lambda: next(iter(serve.out.glob(f"{a['id']}.*.json")), None))
    doc = json.loads(record.read_text())["doc"]
    assert doc["args"] == {**ARGS, "amount": 3900} and doc["original_args"] == ARGS  # raw: the real e-mail
    assert doc["patch"] == [{"op": "replace", "path": "/amount", "value": 3900}]
    assert doc["decision"]["args"]["amount"] == 3900 and doc["decision"]["original_args"]["amount"] == 4200

    def telegram_card() -> str:
        edits = [c.params.get("text", "") for c in tg_api.calls_to("editMessageText")]
        return next((t for t in edits if CHANGED in t), "")

    def slack_card() -> str:
        updates = [json.dumps(c.get("blocks"), ensure_ascii=False) for c in fake_slack.calls_to("chat.update")]
        return next((u for u in updates if CHANGED in u), "")

    assert await until(telegram_card) and await until(slack_card)


async def test_the_slack_modal_refuses_a_bad_value_and_approves_a_good_one(serve: Serve, fake_slack: FakeSlack) -> None:
    a = await serve.suspend("run-2")
    await until(lambda: fake_slack.calls_to("chat.postMessage", ok_only=True))
    ref = make_ref(TokenSigner([TEST_SECRET]), a["id"])

    async def send(payload: dict[str, Any]) -> aiohttp.ClientResponse:
        body, headers = signed(payload, time.time())
        return await serve.http.post(serve.gw.url + PATH, data=body, headers=headers)

    press = block_actions("UALICE", f"hitl:edit:{ref}", ref, response_url=fake_slack.response_url("alice"))
    assert (await send(press)).status == 200
    opened = await until(lambda: fake_slack.calls_to("views.open", ok_only=True))
    view = opened[0]["view"]
    view = view if isinstance(view, dict) else json.loads(view)
    meta = view["private_metadata"]
    before = await serve.trail(a["id"])
    resp = await send(edit_submission("UALICE", meta, {"amount": "9000"}))
    body = await resp.json()
    assert body["response_action"] == "errors" and "maximum of 5000" in body["errors"]["arg:amount"]
    assert await serve.trail(a["id"]) == before
    resp = await send(edit_submission("UALICE", meta, {"amount": "3900"}))
    assert resp.status == 200 and await resp.read() == b""
    _, after = await serve.call("GET", f"/v1/approvals/{a['id']}")
    assert after["status"] == "approved" and after["decision"]["args"]["amount"] == 3900
    assert after["decision"]["decided_by"] == "slack:UALICE"
