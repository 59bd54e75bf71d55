"""Pure `callback_data` for the card buttons: `<verb>|<approval id>|<truncated HMAC>`.

Telegram allows 1-64 bytes. The approval id (16 characters from `service.new_id`) and the verb
are signed with the server secret (purpose `hitl.telegram.cb.v1`), so a forged, edited or
foreign button is refused before anything is looked up. State stays on the server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from gateway.core.models import Outcome

MAX_BYTES = 64
PURPOSE = "hitl.telegram.cb.v1"
MAC_LENGTH = 16  # hex characters = 64 bits
_VERBS = {"a": Outcome.APPROVE, "r": Outcome.REJECT}
_CODES = {v: k for k, v in _VERBS.items()}
MAX_ID_BYTES = MAX_BYTES - len("a||") - MAC_LENGTH  # 45


class Macs(Protocol):
    """What `gateway.tokens.TokenSigner` offers for short MACs."""

    def mac(self, purpose: str, message: str, length: int = 10) -> str: ...

    def check_mac(self, purpose: str, message: str, mac: str, length: int = 10) -> bool: ...


class CallbackTooLong(ValueError):
    """The approval id is too long to fit a signed callback_data in 64 bytes."""


@dataclass(frozen=True, slots=True)
class Button:
    approval_id: str
    outcome: Outcome


def build(signer: Macs, approval_id: str, outcome: Outcome) -> str:
    """The signed callback_data for one button; CallbackTooLong if it cannot fit 64 bytes."""
    if not approval_id or "|" in approval_id or len(approval_id.encode()) > MAX_ID_BYTES:
        raise CallbackTooLong(f"approval id must be 1-{MAX_ID_BYTES} bytes without '|' to fit callback_data")
    message = f"{_CODES[outcome]}|{approval_id}"
    data = f"{message}|{signer.mac(PURPOSE, message, MAC_LENGTH)}"
    assert len(data.encode()) <= MAX_BYTES
    return data


def parse(signer: Macs, data: str | None) -> Button | None:
    """The button a callback_data stands for, or None if it is malformed or forged."""
    if not data or len(data.encode()) > MAX_BYTES:
        return None
    parts = data.split("|")
    if len(parts) != 3:
        return None
    verb, approval_id, mac = parts
    outcome = _VERBS.get(verb)
    if outcome is None or not approval_id or len(mac) != MAC_LENGTH:
        return None
    if not signer.check_mac(PURPOSE, f"{verb}|{approval_id}", mac, MAC_LENGTH):
        return None
    return Button(approval_id, outcome)
