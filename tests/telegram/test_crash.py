"""kill -9 while a press is being handled: Telegram redelivers the update, and it must count once.

The webhook remembers an update id before it decides (to drop Telegram's redeliveries), and
answers the press after the decision's commit (so the answer tells what was committed), in its
2xx. A gateway killed before its 2xx gets the same update again: a redelivery after the commit
changes nothing more (it is answered, in its own 2xx, since the first answer never left), and one
whose first delivery died between the mark and the commit must still decide.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from gateway.core.models import Status
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.testing import FakeClock, make_settings
from tests.fakes.telegram_api import QUERY_INVALID, FakeTelegramAPI
from tests.procs import AUTH, Gateway, free_port, run_cli, write_config
from tests.telegram.conftest import ALICE, CHAT, HEADERS, SECRET, TG, TOKEN

pytestmark = pytest.mark.subprocess


def _gateway(tmp_path: Path, tg_api: FakeTelegramAPI, extra: str = "", env: dict[str, str] | None = None) -> Gateway:
    db, port = f"sqlite:///{tmp_path / 'crash.db'}", free_port()
    telegram = f'[telegram]\nbot_token = "{TOKEN}"\nwebhook_secret = "{SECRET}"\nbase_url = "{tg_api.base_url}"\n'
    telegram += f"chats = [{CHAT}]\n"
    return Gateway(write_config(tmp_path / "gw.toml", db, port, telegram + extra), port, tmp_path / "gw.log", env)


_BODY = {"run_id": "r", "step": "pay", "title": "Pay", "channels": [f"telegram:{CHAT}"]}


async def _suspend(http: aiohttp.ClientSession, gw: Gateway) -> str:
    async with http.post(f"{gw.url}/v1/suspend", json=_BODY, headers=AUTH) as resp:
        assert resp.status == 201
        return str((await resp.json())["id"])


async def test_a_press_killed_mid_flight_is_decided_on_redelivery(
    tmp_path: Path, tg_api: FakeTelegramAPI, aiohttp_client: Callable[..., Any]
) -> None:
    gw = _gateway(tmp_path, tg_api, f"approvers = [{ALICE}]\n").start()
    db = f"sqlite:///{tmp_path / 'crash.db'}"
    helper = TG(None, None, tg_api, None)  # type: ignore[arg-type]
    release = asyncio.Event()
    try:
        async with aiohttp.ClientSession() as http:
            approval_id = await _suspend(http, gw)
            await tg_api.wait_for_call("sendMessage")
            mid = max(m for (_, m) in tg_api.messages)
            # a reject asks why (sendMessage) after its commit, before its 2xx: the press hangs there
            release = tg_api.hold("sendMessage")
            update = helper.press(ALICE, helper.data(mid, "Reject"), mid)
            press = asyncio.create_task(
                http.post(f"{gw.url}/webhooks/telegram", data=json.dumps(update), headers=HEADERS)
            )
            await tg_api.wait_for_call("sendMessage", 30, count=2)
            gw.kill9()
            with contextlib.suppress(aiohttp.ClientError):
                await press  # Telegram got no 2xx: it will redeliver the same update
    finally:
        gw.stop()
        release.set()

    settings = make_settings(
        db,
        {
            "telegram": {
                "bot_token": TOKEN,
                "webhook_secret": SECRET,
                "base_url": tg_api.base_url,
                "approvers": [ALICE],
                "chats": [CHAT],
            }
        },
    )
    rt = Runtime(settings, clock=FakeClock(datetime.now(UTC)), owner="restarted")
    client = await aiohttp_client(create_app(settings, runtime=rt, background=False))
    assert (await rt.service.get(approval_id)).status is Status.REJECTED  # committed before the answer
    assert tg_api.calls_to("answerCallbackQuery") == []  # its 2xx, which carried the answer, never left
    for _ in range(2):  # redeliveries after the commit change nothing more
        resp = await client.post("/webhooks/telegram", data=json.dumps(update), headers=HEADERS)
        assert resp.status == 200
        await tg_api.apply_webhook_reply(await resp.json(), update)
    decided = [e for e in await rt.store.list_events(approval_id) if e.kind == "rejected"]
    assert len(decided) == 1 and not tg_api.bad_replies
    # the first redelivery's 2xx answers the press (what it said the first time); the second is refused
    answers = [(c.params["text"], c.error) for c in tg_api.calls_to("answerCallbackQuery")]
    assert answers == [("Rejected", None), ("Rejected", QUERY_INVALID)]
    assert tg_api.http_calls_to("answerCallbackQuery") == []

    # A first delivery that died between its de-duplication marks and the commit: its redelivery decides.
    resp = await client.post("/v1/suspend", json={**_BODY, "step": "pay-2"}, headers=AUTH)
    second = str((await resp.json())["id"])
    # the store stamps new rows with the wall clock (under load, more than a second after the restart)
    rt.clock.set(max(rt.clock.now(), datetime.now(UTC)) + timedelta(seconds=1))  # type: ignore[attr-defined]
    await rt.outbox.drain()
    mid2 = max(m for (_, m) in tg_api.messages)
    update2 = helper.press(ALICE, helper.data(mid2, "Approve"), mid2)
    now = rt.clock.now()
    await rt.store.remember_inbound(f"telegram:update:{update2['update_id']}", now)
    await rt.store.remember_inbound(f"telegram:callback:{update2['callback_query']['id']}", now)
    assert (await client.post("/webhooks/telegram", data=json.dumps(update2), headers=HEADERS)).status == 200
    approval = await rt.service.get(second)
    assert approval.status is Status.APPROVED
    assert approval.decision is not None and approval.decision.decided_by == f"telegram:{ALICE}"


async def _card(http: aiohttp.ClientSession, url: str, approval_id: str, status: str) -> dict[str, Any]:
    async with asyncio.timeout(15):
        while True:
            async with http.get(f"{url}/v1/approvals/{approval_id}", headers=AUTH) as resp:
                body = await resp.json()
            if body["cards"] and body["cards"][0]["status"] == status:
                return dict(body)
            await asyncio.sleep(0.05)


async def test_kill_9_mid_post_never_posts_the_card_twice(tmp_path: Path, tg_api: FakeTelegramAPI) -> None:
    """Killed after Telegram posted the card and before the gateway heard: the restarted gateway
    does not post it again (it cannot know): the card is `uncertain`, and an operator can ask
    for a new post with `hitl-gateway cards resend`."""
    # a short lease, so that the restarted gateway takes the dead one's delivery over quickly
    gw = _gateway(tmp_path, tg_api, env={"HITL_STORE_LEASE": "2s"}).start()
    config = gw.config
    release = tg_api.hold_answer("sendMessage")
    try:
        async with aiohttp.ClientSession() as http:
            approval_id = await _suspend(http, gw)
            await tg_api.wait_for_call("sendMessage")
            gw.kill9()
            release.set()
            del tg_api.answer_holds["sendMessage"]
            assert len(tg_api.messages) == 1  # Telegram posted it; the gateway never heard

            gw.start()
            view = await _card(http, gw.url, approval_id, "uncertain")
            assert len(tg_api.calls_to("sendMessage")) == 1
            assert [d["status"] for d in view["deliveries"]] == ["uncertain"]

            code, out = await run_cli(config, "cards", "resend", approval_id, f"telegram:{CHAT}")
            assert code == 0, out
            await _card(http, gw.url, approval_id, "done")
            assert len(tg_api.calls_to("sendMessage")) == 2  # the operator chose a second card
            code, out = await run_cli(config, "cards", "resend", approval_id, f"telegram:{CHAT}")
            assert code == 2 and "nothing to resend" in out  # a user error: exit 2
    finally:
        gw.stop()
        release.set()
