"""Pure helpers that turn a parsed `telegram.Update` into the few facts the gateway uses."""

from __future__ import annotations

from dataclasses import dataclass

from telegram import Update, User


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


def who(user: User) -> str:
    return f"@{user.username}" if user.username else user.first_name or str(user.id)


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


def read_update(update: Update) -> TelegramPress | TelegramReply | None:
    """The press or reply in an update, or None for anything else."""
    query = update.callback_query
    if query is not None:
        message = query.message
        return TelegramPress(
            update_id=update.update_id,
            query_id=query.id,
            user_id=query.from_user.id,
            who=who(query.from_user),
            chat_id=message.chat.id if message is not None else None,
            message_id=message.message_id if message is not None else None,
            data=query.data,
        )
    msg = update.message
    if msg is None or msg.from_user is None or msg.reply_to_message is None or not msg.text:
        return None
    return TelegramReply(
        update_id=update.update_id,
        user_id=msg.from_user.id,
        who=who(msg.from_user),
        chat_id=msg.chat.id,
        reply_to_message_id=msg.reply_to_message.message_id,
        text=msg.text,
    )
