"""Pure `callback_data` for the card buttons: `<verb>|<approval id>|<truncated HMAC>`.

Verbs: `a` approve, `r` reject, `e` edit (the presser gets a one-time link to the edit form),
`x<duration>` extend the deadline (`x1h`).

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
EDIT = "e"
EXTEND = "x"
MAX_DURATION = 8  # '+90m', '1d12h': an extend verb stays short


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
    action: str = "vote"  # vote | edit | extend
    duration: str | None = None  # extend: the policy's duration, as written ('1h')


def build(signer: Macs, approval_id: str, outcome: Outcome) -> str:
    """The signed callback_data for one button; CallbackTooLong if it cannot fit 64 bytes."""
    if not approval_id or "|" in approval_id or len(approval_id.encode()) > MAX_ID_BYTES:
        raise CallbackTooLong(f"approval id must be 1-{MAX_ID_BYTES} bytes without '|' to fit callback_data")
    message = f"{_CODES[outcome]}|{approval_id}"
    data = f"{message}|{signer.mac(PURPOSE, message, MAC_LENGTH)}"
    assert len(data.encode()) <= MAX_BYTES
    return data


def build_action(signer: Macs, approval_id: str, verb: str) -> str:
    """The signed callback_data of an Edit (`e`) or extend (`x1h`) button."""
    if not (verb == EDIT or (verb.startswith(EXTEND) and 1 < len(verb) <= MAX_DURATION + 1)) or "|" in verb:
        raise ValueError(f"not a button verb: {verb!r}")
    message = f"{verb}|{approval_id}"
    data = f"{message}|{signer.mac(PURPOSE, message, MAC_LENGTH)}"
    if len(data.encode()) > MAX_BYTES:
        raise CallbackTooLong("approval id too long for this button's callback_data")
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
    action = "vote" if outcome else "edit" if verb == EDIT else "extend" if verb.startswith(EXTEND) else None
    if action is None or not approval_id or len(mac) != MAC_LENGTH:
        return None
    if not signer.check_mac(PURPOSE, f"{verb}|{approval_id}", mac, MAC_LENGTH):
        return None
    if action == "extend":
        return Button(approval_id, Outcome.APPROVE, action, verb[1:])
    return Button(approval_id, outcome or Outcome.APPROVE, action)
