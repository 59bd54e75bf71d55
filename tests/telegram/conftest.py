"""Telegram fixtures: the fake Bot API on loopback, and the real app pointed at it."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from adapters.telegram.parse import parse_ref
from gateway.config import Settings
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.testing import FakeClock
from tests.conftest import AUTH, suspend_body
from tests.fakes.telegram_api import FakeTelegramAPI, callback_update

TOKEN = "123456:TEST-token_abc"
SECRET = "hook_secret-0123456789"
CHAT = -1001234567890
ALICE, BOB, MALLORY = 111, 222, 666
HEADERS = {"X-Telegram-Bot-Api-Secret-Token": SECRET}


class TG:
    """The app, its runtime, the fake API and helpers to press buttons like Telegram does."""

    def __init__(self, rt: Runtime, client: TestClient[Any, Any], api: FakeTelegramAPI, clock: FakeClock) -> None:
        self.rt, self.client, self.api, self.clock = rt, client, api, clock
        self._update_ids = itertools.count(5000)
        self._query_ids = itertools.count(9000)

    async def suspend(self, **over: Any) -> str:
        body = suspend_body(channels=[f"telegram:{CHAT}"], **over)
        resp = await self.client.post("/v1/suspend", json=body, headers=AUTH)
        assert resp.status == 201, await resp.text()
        approval_id: str = (await resp.json())["id"]
        return approval_id

    async def posted(self, **over: Any) -> tuple[str, int]:
        """Suspend and deliver the card; return (approval id, card message id)."""
        approval_id = await self.suspend(**over)
        await self.rt.outbox.drain()
        card = await self.rt.store.get_card(approval_id, f"telegram:{CHAT}")
        assert card is not None and card.ref is not None, card
        return approval_id, parse_ref(card.ref)[1]

    def buttons(self, message_id: int) -> dict[str, str]:
        """Button label -> callback_data, as the fake received them."""
        markup = self.api.message(CHAT, message_id).get("reply_markup") or {}
        return {b["text"]: b["callback_data"] for row in markup.get("inline_keyboard", []) for b in row}

    def data(self, message_id: int, verb: str) -> str:
        return self.data_in(CHAT, message_id, verb)

    def data_in(self, chat_id: int, message_id: int, verb: str) -> str:
        markup = self.api.message(chat_id, message_id).get("reply_markup") or {}
        buttons = {b["text"]: b["callback_data"] for row in markup.get("inline_keyboard", []) for b in row}
        return next(v for k, v in buttons.items() if verb in k)

    def press(self, user_id: int, data: str, message_id: int, *, username: str | None = None) -> dict[str, Any]:
        user: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": f"U{user_id}"}
        if username:
            user["username"] = username
        return callback_update(next(self._update_ids), str(next(self._query_ids)), user, CHAT, message_id, data)

    def reply(self, user_id: int, to_message_id: int, text: str, *, chat_id: int = CHAT) -> dict[str, Any]:
        chat = {"id": chat_id, "type": "supergroup", "title": "ops"}
        return {
            "update_id": next(self._update_ids),
            "message": {
                "message_id": next(self._query_ids),
                "date": 1_900_000_000,
                "chat": chat,
                "from": {"id": user_id, "is_bot": False, "first_name": f"U{user_id}"},
                "text": text,
                "reply_to_message": {"message_id": to_message_id, "date": 1_900_000_000, "chat": chat, "text": "?"},
            },
        }

    async def send(self, update: dict[str, Any], headers: dict[str, str] | None = None) -> int:
        """Deliver `update` as Telegram does, running the method its 200 carries (the press's answer)."""
        resp = await self.client.post("/webhooks/telegram", data=json.dumps(update), headers=HEADERS | (headers or {}))
        if resp.status == 200:
            await self.api.apply_webhook_reply(await resp.json(), update)
            assert not self.api.bad_replies, self.api.bad_replies
        return resp.status

    def answers(self) -> list[str]:
        """The answers the pressers saw (Telegram refuses a second answer to one press)."""
        return [c.params.get("text", "") for c in self.api.calls_to("answerCallbackQuery") if c.error is None]


@pytest.fixture
async def tg_api(aiohttp_server: Callable[..., Any]) -> FakeTelegramAPI:
    api = FakeTelegramAPI(TOKEN)
    server = await aiohttp_server(api.app)
    api.base_url = str(server.make_url("/bot"))
    return api


@pytest.fixture
def tg_settings(settings_factory: Callable[..., Settings], tg_api: FakeTelegramAPI) -> Settings:
    telegram = {
        "bot_token": TOKEN,
        "webhook_secret": SECRET,
        "base_url": tg_api.base_url,
        "approvers": [ALICE, BOB],
        "chats": [CHAT],
    }
    return settings_factory(
        telegram=telegram,
        policies={
            "pair": {"timeout": "1h", "quorum": 2},
            "nudge": {"timeout": "30m", "remind": ["10m"]},
            "stretch": {"timeout": "1h", "extend": ["1h", "1d"], "max_extensions": 1},
            "roomy": {"timeout": "1h", "extend": ["1h"], "max_extensions": 3},  # a second extension is allowed
            "strict": {"timeout": "1h", "require_reason": True},
        },
    )


@pytest.fixture
async def tg(
    aiohttp_client: Callable[..., Any], tg_settings: Settings, tg_api: FakeTelegramAPI, clock: FakeClock
) -> TG:
    rt = Runtime(tg_settings, clock=clock, owner="test")
    client = await aiohttp_client(create_app(tg_settings, runtime=rt, background=False))
    return TG(rt, client, tg_api, clock)
