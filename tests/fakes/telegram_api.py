"""A local fake of the Telegram Bot API: `POST /bot{token}/{method}` on aiohttp.

It parses bodies as the real API receives them (form-encoded, `reply_markup` a JSON string),
records every call, keeps the messages it "sent" (so edits to identical content fail with
"message is not modified"), checks callback_data sizes (400 BUTTON_DATA_INVALID above 64 bytes),
parses HTML as strictly as Telegram and refuses a text over 4096 characters after parsing
(`telegram_html.py`), and injects faults: 429 with `parameters.retry_after`, 500, 403, 400, or a
group upgraded to a supergroup (`migrate`: every later call on the old chat id is refused with
`migrate_to_chat_id`, as Telegram does).
The REAL python-telegram-bot client talks to it through `base_url`.

A webhook's 200 may carry one method for Telegram to run (`{"method": "answerCallbackQuery",
...}`): a test playing Telegram hands that body to `apply_webhook_reply`, which runs it through the
same handlers, checks and faults as a call, and records it in `calls` with `via="reply"`. A reply
no Telegram could run (no method of the Bot API, or parameters it refuses) lands in `bad_replies`
for the test to see. A press is answered once: a second answer to the same callback query is
refused with "query is too old ... or query ID is invalid" (what third parties report Telegram
answering; unverified), as is an answer of an earlier press in another update's reply.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.telegram_html import text_error

UPGRADED = "Bad Request: group chat was upgraded to a supergroup chat"
BOT_USER = {"id": 999, "is_bot": True, "first_name": "HITL", "username": "hitl_test_bot"}
NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are exactly"
    " the same as a current content and reply markup of the message"
)


QUERY_INVALID = "Bad Request: query is too old and response timeout expired or query ID is invalid"


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    via: str = "http"  # "reply": run by Telegram from a webhook's answer (`apply_webhook_reply`)
    error: str | None = None  # the description of the failure Telegram answered (None: it worked)
    injected: bool = False  # that failure was a fault the test asked for (`fail`)


@dataclass
class Fault:
    status: int
    description: str
    parameters: dict[str, Any] = field(default_factory=dict)


class FakeTelegramAPI:
    def __init__(self, token: str) -> None:
        self.token = token
        self.calls: list[Call] = []
        self.faults: dict[str, list[Fault]] = defaultdict(list)
        self.messages: dict[tuple[int, int], dict[str, Any]] = {}
        self.updates: list[dict[str, Any]] = []
        self.migrated: dict[int, int] = {}  # old chat id -> the supergroup's id
        self.holds: dict[str, asyncio.Event] = {}
        self.answer_holds: dict[str, asyncio.Event] = {}
        self.answered: set[str] = set()  # callback query ids answered once already
        self.bad_replies: list[Call] = []  # webhook replies Telegram could not have run
        self.base_url = ""  # set by the test once the server listens
        self._ids = itertools.count(100)
        self._changed = asyncio.Event()
        self.app = web.Application()
        self.app.router.add_route("*", "/bot{token}/{method}", self._handle)

    # ---------------------------------------------------------------- test controls
    def fail(self, method: str, status: int, description: str = "", *, times: int = 1, **parameters: Any) -> None:
        """The next `times` calls to `method` fail with this status (and e.g. retry_after=3)."""
        text = description or {429: "Too Many Requests: retry later", 500: "Internal Server Error"}.get(
            status, "Forbidden: bot was kicked from the group chat"
        )
        self.faults[method].extend(Fault(status, text, dict(parameters)) for _ in range(times))

    def migrate(self, old: int, new: int) -> None:
        """The group `old` becomes the supergroup `new`; its messages move there with their ids
        (an assumption: the Bot API does not say what becomes of them)."""
        self.migrated[old] = new
        for chat, mid in [k for k in self.messages if k[0] == old]:
            msg = self.messages.pop((chat, mid))
            self.messages[(new, mid)] = {**msg, "chat": {**msg["chat"], "id": new}}

    def hold(self, method: str) -> asyncio.Event:
        """Calls of `method` hang (after being recorded) until the returned event is set."""
        return self.holds.setdefault(method, asyncio.Event())

    def hold_answer(self, method: str) -> asyncio.Event:
        """Calls of `method` take effect (the message is posted), then their answer hangs until
        the returned event is set: the caller cannot know that Telegram acted."""
        return self.answer_holds.setdefault(method, asyncio.Event())

    async def wait_for_call(self, method: str, within: float = 10.0, count: int = 1) -> list[Call]:
        """Wait (bounded) until `method` has been called (`count` times); for tests driving a real subprocess."""
        async with asyncio.timeout(within):
            while len(self.calls_to(method)) < count:
                self._changed.clear()
                await self._changed.wait()
        return self.calls_to(method)

    def calls_to(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def http_calls_to(self, method: str) -> list[Call]:
        """The calls the bot made itself (requests), not the methods run from webhook replies."""
        return [c for c in self.calls_to(method) if c.via == "http"]

    async def apply_webhook_reply(self, body: Any, update: dict[str, Any] | None = None) -> Call | None:
        """Run the method the 200 of a webhook delivery carries, as Telegram does, as if the bot had
        called it (recorded, faults and checks included); None when it carries none. `update`: the
        update that 200 answered; an answerCallbackQuery in its reply must be for its own press."""
        if not isinstance(body, dict) or "method" not in body:
            return None
        method = body["method"]
        call = Call(str(method), {k: v for k, v in body.items() if k != "method"}, via="reply")
        self.calls.append(call)
        self._changed.set()
        query = (update or {}).get("callback_query", {}).get("id")
        if not isinstance(method, str) or not method:
            call.error = "Bad Request: method is not a string"
        elif method == "answerCallbackQuery" and update is not None and call.params.get("callback_query_id") != query:
            call.error = "the reply answers another update's callback query"  # the bot's bug, whatever Telegram did
        else:
            await self._run(call, hold=False)
            if call.error == QUERY_INVALID or call.injected:
                return call  # Telegram refused a call it could run: the bot never learns it
        if call.error is not None:
            self.bad_replies.append(call)
        return call

    def message(self, chat_id: int, message_id: int) -> dict[str, Any]:
        return self.messages[(chat_id, message_id)]

    # ---------------------------------------------------------------- the API
    async def _handle(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return _error(401, "Unauthorized")
        method = request.match_info["method"]
        call = Call(method, await _params(request))
        self.calls.append(call)
        self._changed.set()
        if method in self.holds:
            await self.holds[method].wait()
        return await self._run(call)

    async def _run(self, call: Call, *, hold: bool = True) -> web.Response:
        """One call's effect and answer; a failure's description goes in `call.error`."""
        method, params = call.method, call.params
        if self.faults[method]:
            fault = self.faults[method].pop(0)
            call.error, call.injected = fault.description, True
            return _error(fault.status, fault.description, fault.parameters)
        moved = self.migrated.get(_int(params.get("chat_id")))
        handler = getattr(self, f"_m_{method}", None)
        if moved is not None:
            response = _error(400, UPGRADED, {"migrate_to_chat_id": moved})
        elif handler is None:
            response = _error(404, "Not Found: method not found")
        else:
            result: Any = handler(params)
            if asyncio.iscoroutine(result):
                result = await result
            if hold and method in self.answer_holds:
                await self.answer_holds[method].wait()
            response = result if isinstance(result, web.Response) else web.json_response({"ok": True, "result": result})
        if response.status != 200:
            assert isinstance(response.body, bytes)
            call.error = json.loads(response.body)["description"]
        return response

    def _m_getMe(self, params: dict[str, Any]) -> Any:
        return BOT_USER

    def _m_sendMessage(self, params: dict[str, Any]) -> Any:
        bad = _check_markup(params.get("reply_markup")) or _check_text(params)
        if bad:
            return bad
        chat = int(params["chat_id"])
        mid = next(self._ids)
        msg = {
            "message_id": mid,
            "date": 1_900_000_000,
            "chat": {"id": chat, "type": "supergroup", "title": "ops"},
            "from": BOT_USER,
            "text": params["text"],
            "reply_markup": params.get("reply_markup"),
        }
        self.messages[(chat, mid)] = msg
        return _public(msg)

    def _m_editMessageText(self, params: dict[str, Any]) -> Any:
        key = (int(params["chat_id"]), int(params["message_id"]))
        msg = self.messages.get(key)
        if msg is None:
            return _error(400, "Bad Request: message to edit not found")
        if msg["text"] == params["text"] and msg.get("reply_markup") == params.get("reply_markup"):
            return _error(400, NOT_MODIFIED)
        bad = _check_markup(params.get("reply_markup")) or _check_text(params)
        if bad:
            return bad
        msg.update(text=params["text"], reply_markup=params.get("reply_markup"))
        return _public(msg)

    def _m_answerCallbackQuery(self, params: dict[str, Any]) -> Any:
        query, text = params.get("callback_query_id"), params.get("text", "")
        if not isinstance(query, str) or not query:
            return _error(400, "Bad Request: parameter callback_query_id is required")
        if not isinstance(text, str) or len(text) > 200:
            return _error(400, "Bad Request: MESSAGE_TOO_LONG")
        if params.get("show_alert", False) not in (True, False, "true", "false"):
            return _error(400, "Bad Request: can't parse show_alert")
        if query in self.answered:
            return _error(400, QUERY_INVALID)
        self.answered.add(query)
        return True

    def _m_setWebhook(self, params: dict[str, Any]) -> Any:
        return True

    def _m_deleteWebhook(self, params: dict[str, Any]) -> Any:
        return True

    async def _m_getUpdates(self, params: dict[str, Any]) -> Any:
        """Long polling: wait up to `timeout` seconds for an update at or after `offset`."""
        offset = int(params.get("offset", 0))
        loop = asyncio.get_running_loop()
        until = loop.time() + float(params.get("timeout", 0))
        while True:
            self.updates = [u for u in self.updates if u["update_id"] >= offset]
            if self.updates or loop.time() >= until:
                return self.updates
            await asyncio.sleep(min(0.05, until - loop.time()))


async def _params(request: web.Request) -> dict[str, Any]:
    if request.content_type == "application/json":
        raw: dict[str, Any] = await request.json()
    else:
        raw = {k: v for k, v in (await request.post()).items() if isinstance(v, str)}
    out: dict[str, Any] = dict(raw)
    for key in ("reply_markup", "allowed_updates", "reply_parameters"):
        if isinstance(out.get(key), str):
            out[key] = json.loads(out[key])
    return out


def callback_update(
    update_id: int, query_id: str, user: dict[str, Any], chat_id: int, message_id: int, data: str
) -> dict[str, Any]:
    """A button press as Telegram delivers it to the webhook (or in getUpdates)."""
    return {
        "update_id": update_id,
        "callback_query": {
            "id": query_id,
            "from": user,
            "chat_instance": "42",
            "data": data,
            "message": {
                "message_id": message_id,
                "date": 1_900_000_000,
                "chat": {"id": chat_id, "type": "supergroup", "title": "ops"},
                "text": "card",
            },
        },
    }


def _public(msg: dict[str, Any]) -> dict[str, Any]:
    """A message as the API returns it: only inline keyboards come back as reply_markup."""
    out = {k: v for k, v in msg.items() if v is not None}
    if "inline_keyboard" not in (msg.get("reply_markup") or {}):
        out.pop("reply_markup", None)
    return out


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _check_text(params: dict[str, Any]) -> web.Response | None:
    error = text_error(str(params.get("text", "")), params.get("parse_mode"))
    return None if error is None else _error(400, error)


def _check_markup(markup: Any) -> web.Response | None:
    for row in (markup or {}).get("inline_keyboard", []):
        for button in row:
            data = button.get("callback_data")
            if data is not None and not 1 <= len(data.encode()) <= 64:
                return _error(400, "Bad Request: BUTTON_DATA_INVALID")
    return None


def _error(status: int, description: str, parameters: dict[str, Any] | None = None) -> web.Response:
    body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    if parameters:
        body["parameters"] = parameters
    return web.json_response(body, status=status)
