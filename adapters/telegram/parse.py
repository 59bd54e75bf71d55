"""Pure helpers that turn an update (the Bot API's JSON) into the few facts the gateway uses.

Read straight from the JSON, not through `telegram.Update.de_json`: a webhook update needs six
fields, and building python-telegram-bot's whole object tree for each one cost a tenth of a
cycle (bench/telegram_parse.py). The Bot API calls of a cycle are read the same way (api.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class TelegramPress:
    """A button press (callback query)."""

    update_id: int
    query_id: str
    user_id: int
    who: str  # "@name" or the first name, for messages to people
    chat_id: int | None
    message_id: int | None
    data: str | None


@dataclass(frozen=True, slots=True)
class TelegramReply:
    """A text message that replies to one of our messages (e.g. the reason prompt)."""

    update_id: int
    user_id: int
    who: str
    chat_id: int
    reply_to_message_id: int
    text: str


def actor(user_id: int) -> str:
    """Approver ids in the gateway: 'telegram:<user_id>'."""
    return f"telegram:{user_id}"


class NotAnUpdate(ValueError):
    """The body is not a Telegram update (the webhook answers 400)."""


def _int(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise NotAnUpdate(f"{key}: expected an integer")
    return value


def _str(data: Mapping[str, Any], key: str, *, required: bool = True) -> str | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise NotAnUpdate(f"{key}: expected a string")
    return value


def _obj(data: Mapping[str, Any], key: str, *, required: bool = True) -> Mapping[str, Any] | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, Mapping):
        raise NotAnUpdate(f"{key}: expected an object")
    return value


def who(user: Mapping[str, Any]) -> str:
    """ "@name", else the first name, else the id: how a message names a person."""
    username, first = user.get("username"), user.get("first_name")
    if isinstance(username, str) and username:
        return f"@{username}"
    return first if isinstance(first, str) and first else str(user.get("id"))


def card_ref(chat_id: int | str, message_id: int) -> str:
    """A card's reference: '<chat_id>:<message_id>' (the chat may differ from the target after a migration)."""
    return f"{chat_id}:{message_id}"


def parse_ref(ref: str) -> tuple[int | str, int]:
    chat, _, message = ref.rpartition(":")
    if not chat or not message.lstrip("-").isdigit():
        raise ValueError(f"not a Telegram card ref: {ref!r}")
    return chat_id(chat), int(message)


def chat_id(target: str) -> int | str:
    """'-100123' -> -100123; '@channel' stays a string."""
    return int(target) if target.lstrip("-").isdigit() else target


def prompt_key(chat: int | str, message_id: int) -> str:
    return f"telegram:{chat}:{message_id}"


def update_id(data: Any) -> int:
    """The update's id (NotAnUpdate unless `data` is an object with an integer `update_id`)."""
    if not isinstance(data, Mapping):
        raise NotAnUpdate("expected a JSON object")
    return _int(data, "update_id")


def read_update(data: Mapping[str, Any]) -> TelegramPress | TelegramReply | None:
    """The press or reply in an update, or None for anything else (NotAnUpdate if a field we
    read has the wrong type)."""
    uid = update_id(data)
    query = _obj(data, "callback_query", required=False)
    if query is not None:
        user = _obj(query, "from")
        assert user is not None
        message = _obj(query, "message", required=False)  # absent for an inline message's button
        chat = _obj(message, "chat") if message is not None else None
        return TelegramPress(
            update_id=uid,
            query_id=_str(query, "id") or "",
            user_id=_int(user, "id"),
            who=who(user),
            chat_id=_int(chat, "id") if chat is not None else None,
            message_id=_int(message, "message_id") if message is not None else None,
            data=_str(query, "data", required=False),
        )
    msg = _obj(data, "message", required=False)
    if msg is None:
        return None
    user = _obj(msg, "from", required=False)
    replied = _obj(msg, "reply_to_message", required=False)
    text = _str(msg, "text", required=False)
    if user is None or replied is None or not text:
        return None
    chat = _obj(msg, "chat")
    assert chat is not None
    return TelegramReply(
        update_id=uid,
        user_id=_int(user, "id"),
        who=who(user),
        chat_id=_int(chat, "id"),
        reply_to_message_id=_int(replied, "message_id"),
        text=text,
    )
