"""The Bot API calls made per card and per press, with their answers read as JSON.

python-telegram-bot's `Bot` methods turn every answer into PTB objects (`Message.de_json`, about
100 µs, twice per full cycle) for the two fields the gateway keeps: the chat id and the message
id. These calls go through the same `AiohttpRequest` as the `Bot` (one connection pool) and PTB's
`BaseRequest.post`, so every error answer becomes the same PTB exception as before (RetryAfter,
ChatMigrated, BadRequest, Forbidden, NetworkError, TimedOut). Parameters are encoded as PTB
encodes them (a string as is, anything else as JSON: `reply_markup` is a JSON string in the form
body), which tests/telegram/test_api.py checks against `Bot.send_message`. The `Bot` keeps the
rest: getMe at start-up, setWebhook, getUpdates.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeGuard

from telegram.error import NetworkError, TelegramError

from adapters.telegram.request import AiohttpRequest, scrub

Chat = int | str
Markup = Mapping[str, Any]  # a reply_markup as the Bot API's JSON ({"inline_keyboard": [...]})
HTML = "HTML"


def form(params: Mapping[str, object]) -> dict[str, str]:
    """PTB's encoding of a call's parameters (`RequestParameter.json_value`): None is left out
    (Telegram does not handle a null well), a string goes as is, anything else as JSON."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in params.items() if v is not None}


def _chat(value: object) -> TypeGuard[Chat]:
    """A chat id: an integer (a JSON true is not one) or a channel's '@name'."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def sent(method: str, result: object) -> tuple[Chat, int]:
    """The chat id and message id of the Message a call returned. A success answer without them
    is a NetworkError whose cause is not a transport error: the call went through, so the outcome
    of a post stays unknown (errors.unsent) and the card is not posted twice."""
    if isinstance(result, dict):
        chat, message_id = result.get("chat"), result.get("message_id")
        where = chat.get("id") if isinstance(chat, dict) else None
        if isinstance(message_id, int) and not isinstance(message_id, bool) and _chat(where):
            return where, message_id
    raise NetworkError(f"{method}: the Bot API answered without a message") from ValueError("no message in the answer")


def reply_to(message_id: int) -> dict[str, object]:
    """reply_parameters: a reply to `message_id`, sent even if that message is gone."""
    return {"allow_sending_without_reply": True, "message_id": message_id}


class BotApi:
    def __init__(self, request: AiohttpRequest, base_url: str) -> None:
        self.request, self.base_url = request, base_url  # base_url holds the token: never logged

    async def call(self, method: str, **params: object) -> object:
        """The answer's `result`. A success status whose body is not the Bot API's JSON (a proxy's
        page, no `result`) is a NetworkError caused by a ValueError, so that a post stays uncertain:
        PTB raises a bare TelegramError for it, which `errors.unsent` takes for a refusal."""
        body, url = form(params), f"{self.base_url}/{method}"  # an unencodable parameter is our bug
        try:
            return await self.request.call(url, body)
        except (KeyError, TypeError) as exc:  # `post` read `["result"]` of a JSON without one
            message, why = f"{method}: the Bot API's answer has no result", type(exc).__name__
        except TelegramError as exc:
            # A proxy's answer may echo the URL, and with it the token, into the message that the
            # outbox stores and audits: PTB's `message` is its public attribute.
            exc.message = scrub(exc.message, url)
            if type(exc) is not TelegramError:  # PTB's mapping of an error answer or a transport failure
                raise
            message, why = f"{method}: {exc.message}", "a success status with an unreadable body"
        # Out of the except blocks: PTB's error is not the context of ours, nor is what it hangs on
        # to (the parser's error keeps the whole answer, which a proxy's page may echo the URL into).
        raise NetworkError(message) from ValueError(why)

    async def send_message(
        self, chat: Chat, text: str, *, reply_markup: Markup | None = None, reply_parameters: Markup | None = None
    ) -> tuple[Chat, int]:
        """An HTML message; returns the chat it went to and its message id."""
        result = await self.call(
            "sendMessage",
            chat_id=chat,
            text=text,
            parse_mode=HTML,
            reply_markup=reply_markup,
            reply_parameters=reply_parameters,
        )
        return sent("sendMessage", result)

    async def edit_message_text(self, chat: Chat, message_id: int, text: str, reply_markup: Markup | None) -> None:
        """Nothing of the edited Message is needed: a success answer means the card shows `text`."""
        params = {"text": text, "chat_id": chat, "message_id": message_id, "parse_mode": HTML}
        await self.call("editMessageText", **params, reply_markup=reply_markup)

    async def answer_callback_query(self, query_id: str, text: str, show_alert: bool) -> None:
        await self.call("answerCallbackQuery", callback_query_id=query_id, text=text, show_alert=show_alert)
