"""One approval on Telegram, Slack and the web inbox: a press on one channel decides it once, and
every card on every channel converges on the outcome with no live buttons."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from adapters.slack.parse import make_ref
from gateway.config import Settings
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.testing import FakeClock
from tests.conftest import AUTH, suspend_body
from tests.fakes.slack_api import BOT_TOKEN, SIGNING_SECRET, FakeSlack, block_actions, signed
from tests.fakes.telegram_api import FakeTelegramAPI

TG_TOKEN = "123456:TEST-token_abc"
TG_SECRET = "hook_secret-0123456789"
TG_CHAT = -1001234567890
SLACK_CHANNEL = "C0CARDS"


@pytest.fixture
async def env(
    aiohttp_server: Callable[..., Any],
    aiohttp_client: Callable[..., Any],
    settings_factory: Callable[..., Settings],
    clock: FakeClock,
) -> AsyncIterator[dict[str, Any]]:
    tg = FakeTelegramAPI(TG_TOKEN)
    server = await aiohttp_server(tg.app)
    slack = FakeSlack()
    await slack.start()
    slack.clock = lambda: clock.now().timestamp()
    settings = settings_factory(
        telegram={
            "bot_token": TG_TOKEN,
            "webhook_secret": TG_SECRET,
            "base_url": str(server.make_url("/bot")),
            "approvers": [111],
            "chats": [TG_CHAT],
        },
        slack={
            "bot_token": BOT_TOKEN,
            "signing_secret": SIGNING_SECRET,
            "base_url": slack.base_url,
            "approvers": ["UALICE"],
            "channels": [SLACK_CHANNEL],
        },
    )
    rt = Runtime(settings, clock=clock, owner="test")
    client = await aiohttp_client(create_app(settings, runtime=rt, background=False))
    yield {"tg": tg, "slack": slack, "rt": rt, "client": client, "clock": clock}
    await slack.stop()


def tg_message(tg: FakeTelegramAPI) -> dict[str, Any]:
    [msg] = [m for (chat, _), m in tg.messages.items() if chat == TG_CHAT and m.get("reply_to_message") is None]
    return msg


def slack_card(slack: FakeSlack) -> dict[str, Any]:
    [msg] = [m for (ch, _), m in slack.messages.items() if ch == SLACK_CHANNEL]
    return msg


def slack_has_buttons(msg: dict[str, Any]) -> bool:
    blocks = msg.get("blocks")
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    return any(b.get("type") == "actions" for b in blocks or [])


def tg_has_buttons(msg: dict[str, Any]) -> bool:
    markup = msg.get("reply_markup")
    if isinstance(markup, str):
        markup = json.loads(markup)
    return bool(markup and markup.get("inline_keyboard"))


async def test_slack_press_syncs_telegram_and_web_cards(env: dict[str, Any]) -> None:
    client, rt, tg, slack = env["client"], env["rt"], env["tg"], env["slack"]
    channels = [f"telegram:{TG_CHAT}", f"slack:{SLACK_CHANNEL}", "web"]
    resp = await client.post("/v1/suspend", json=suspend_body(channels=channels), headers=AUTH)
    approval_id = (await resp.json())["id"]
    await rt.outbox.drain()
    assert tg_has_buttons(tg_message(tg)) and slack_has_buttons(slack_card(slack))

    ref = make_ref(rt.signer, approval_id)
    body, headers = signed(block_actions("UALICE", f"hitl:approve:{ref}", ref), env["clock"].now().timestamp())
    assert (await client.post("/webhooks/slack/interactions", data=body, headers=headers)).status == 200
    await rt.outbox.drain()

    approval = await rt.store.get_approval(approval_id)
    assert approval.status.value == "approved" and approval.decision.decided_by == "slack:UALICE"
    tg_msg, slack_msg = tg_message(tg), slack_card(slack)
    assert "Approved" in tg_msg["text"] and not tg_has_buttons(tg_msg)
    assert "Approved" in json.dumps(slack_msg) and not slack_has_buttons(slack_msg)
    cards = {c.channel: c.status.value for c in await rt.store.list_cards(approval_id)}
    assert cards == {c: "done" for c in channels}
    synced = [e.channel for e in await rt.store.list_events(approval_id) if e.kind == "card_synced"]
    assert sorted(synced) == sorted(channels)

    # a later Telegram press by an allowed approver changes nothing and is told who won
    keyboard = tg.calls_to("sendMessage")[0].params["reply_markup"]["inline_keyboard"]
    cb_data = next(b["callback_data"] for row in keyboard for b in row if "Approve" in b["text"])
    update = {
        "update_id": 1,
        "callback_query": {
            "id": "q1",
            "from": {"id": 111, "is_bot": False, "first_name": "A"},
            "chat_instance": "1",
            "data": cb_data,
            "message": {
                "message_id": tg_message(tg)["message_id"],
                "date": 1,
                "chat": {"id": TG_CHAT, "type": "group"},
            },
        },
    }
    resp = await client.post(
        "/webhooks/telegram", data=json.dumps(update), headers={"X-Telegram-Bot-Api-Secret-Token": TG_SECRET}
    )
    assert resp.status == 200
    await tg.apply_webhook_reply(await resp.json(), update)  # Telegram runs the answer the 200 carries
    assert not tg.bad_replies
    answer = tg.calls_to("answerCallbackQuery")[-1].params["text"]
    assert "lready" in answer
    decisions = [e for e in await rt.store.list_events(approval_id) if e.kind in ("approved", "rejected")]
    assert len(decisions) == 1


async def test_a_card_redrawn_after_an_edit_records_the_hash_of_what_it_shows(env: dict[str, Any]) -> None:
    """The audit proves what each round was shown: a card redrawn with an approver's edit records
    the content hash of the edited view in its `card_synced` event, not the posted one's."""
    from gateway.core.models import Outcome
    from gateway.core.shown import content_hash

    client, rt = env["client"], env["rt"]
    channels = [f"telegram:{TG_CHAT}", f"slack:{SLACK_CHANNEL}"]
    body = suspend_body(channels=channels, editable=True, policy={"timeout": "1h", "on_timeout": "reject", "quorum": 2})
    resp = await client.post("/v1/suspend", json=body, headers=AUTH)
    assert resp.status == 201, await resp.text()
    approval_id = (await resp.json())["id"]
    await rt.outbox.drain()
    events = await rt.store.list_events(approval_id)
    posted = {e.channel: e.data["content_hash"] for e in events if e.kind == "card_posted"}
    assert set(posted) == set(channels)

    edited = await rt.service.decide(
        approval_id, Outcome.APPROVE, "telegram:111", channel="telegram", args={"amount": 3900, "currency": "USD"}
    )
    assert edited.proposal is not None and not edited.status.final
    await rt.outbox.drain()
    shown = content_hash(edited)
    synced = [e for e in await rt.store.list_events(approval_id) if e.kind == "card_synced"]
    assert {e.channel for e in synced} == set(channels)
    assert {e.data["content_hash"] for e in synced} == {shown}
    assert shown not in posted.values()
    assert (await rt.audit.verify()).ok
