"""Pure `callback_data` for the card buttons: `<verb>|<approval id>|<truncated HMAC>`, and
`a|<approval id>|<round tag>|<truncated HMAC>` for Approve.

Verbs: `a` approve, `r` reject, `e` edit (the presser gets a one-time link to the edit form),
`x<duration>` extend the deadline (`x1h`), and `g<grant>|<approval id>|<round tag>|<MAC>`
approve with a standing grant (`g1h`, `grun`: "Approve · 1h"), at most 9 + 16 + 10 + 16 + 3 = 54
bytes.

Telegram allows 1-64 bytes. The approval id (16 characters from `service.new_id`) and the verb
are signed with the server secret (purpose `hitl.telegram.cb.v1`), so a forged, edited or
foreign button is refused before anything is looked up. State stays on the server.

Approve also carries the round it was drawn for (gateway.core.rounds.tag, 10 characters, under
the MAC), so that a press on a card drawn before another approver changed the args is refused
instead of counting for args the presser never saw. An Approve button without one (drawn before
round tags) parses with `seen` None: the press use case takes it as drawn for the original args.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gateway.core.models import Outcome
from gateway.core.rounds import Macs

MAX_BYTES = 64
PURPOSE = "hitl.telegram.cb.v1"
MAC_LENGTH = 16  # hex characters = 64 bits
_VERBS = {"a": Outcome.APPROVE, "r": Outcome.REJECT}
_CODES = {v: k for k, v in _VERBS.items()}
TAG_LENGTH = 10  # gateway.core.rounds.TAG_LENGTH
MAX_ID_BYTES = MAX_BYTES - len("a|||") - TAG_LENGTH - MAC_LENGTH  # 34 (ids are 16)
EDIT = "e"
EXTEND = "x"
MAX_DURATION = 8  # '+90m', '1d12h': an extend verb stays short
GRANT = "g"


class ButtonAction(StrEnum):
    """What a button does: vote its outcome, open the edit form, or extend the deadline."""

    VOTE = "vote"
    EDIT = "edit"
    EXTEND = "extend"


class CallbackTooLong(ValueError):
    """The approval id is too long to fit a signed callback_data in 64 bytes."""


@dataclass(frozen=True, slots=True)
class Button:
    approval_id: str
    outcome: Outcome
    action: ButtonAction = ButtonAction.VOTE
    duration: str | None = None  # extend: the policy's duration, as written ('1h')
    seen: str | None = None  # approve: the round tag the card was drawn with (None: an older card)
    grant: str | None = None  # approve with a standing grant: the policy's offer ('1h', 'run')


def build(signer: Macs, approval_id: str, outcome: Outcome, seen: str = "") -> str:
    """The signed callback_data for one button (`seen`: Approve's round tag; without one, the
    format of the cards drawn before round tags); CallbackTooLong if it cannot fit 64 bytes."""
    if not approval_id or "|" in approval_id or len(approval_id.encode()) > MAX_ID_BYTES:
        raise CallbackTooLong(f"approval id must be 1-{MAX_ID_BYTES} bytes without '|' to fit callback_data")
    if (seen and outcome is not Outcome.APPROVE) or len(seen) > TAG_LENGTH or "|" in seen:
        raise ValueError("only Approve carries a round tag, of at most 10 characters")
    message = f"{_CODES[outcome]}|{approval_id}" + (f"|{seen}" if seen else "")
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


def build_grant(signer: Macs, approval_id: str, grant: str, seen: str) -> str:
    """The signed callback_data of "Approve · 1h": approve this round's args with the grant."""
    if not 0 < len(grant) <= MAX_DURATION or "|" in grant or "|" in seen or len(seen) > TAG_LENGTH:
        raise ValueError(f"not a grant button: {grant!r}")
    message = f"{GRANT}{grant}|{approval_id}|{seen}"
    data = f"{message}|{signer.mac(PURPOSE, message, MAC_LENGTH)}"
    if len(data.encode()) > MAX_BYTES:
        raise CallbackTooLong("approval id too long for a grant button's callback_data")
    return data


def parse(signer: Macs, data: str | None) -> Button | None:
    """The button a callback_data stands for, or None if it is malformed or forged."""
    if not data or len(data.encode()) > MAX_BYTES:
        return None
    parts = data.split("|")
    if len(parts) == 4 and parts[0] == _CODES[Outcome.APPROVE] and parts[2]:
        verb, approval_id, seen, mac = parts
        if len(mac) != MAC_LENGTH or not signer.check_mac(PURPOSE, f"{verb}|{approval_id}|{seen}", mac, MAC_LENGTH):
            return None
        return Button(approval_id, Outcome.APPROVE, seen=seen) if approval_id else None
    if len(parts) == 4 and parts[0].startswith(GRANT) and len(parts[0]) > 1 and parts[1] and parts[2]:
        verb, approval_id, seen, mac = parts
        if len(mac) != MAC_LENGTH or not signer.check_mac(PURPOSE, f"{verb}|{approval_id}|{seen}", mac, MAC_LENGTH):
            return None
        return Button(approval_id, Outcome.APPROVE, seen=seen, grant=verb[1:])
    if len(parts) != 3:
        return None
    verb, approval_id, mac = parts
    outcome = _VERBS.get(verb)
    action = _action(verb, outcome)
    if action is None or not approval_id or len(mac) != MAC_LENGTH:
        return None
    if not signer.check_mac(PURPOSE, f"{verb}|{approval_id}", mac, MAC_LENGTH):
        return None
    if action is ButtonAction.EXTEND:
        return Button(approval_id, Outcome.APPROVE, action, verb[1:])
    return Button(approval_id, outcome or Outcome.APPROVE, action)


def _action(verb: str, outcome: Outcome | None) -> ButtonAction | None:
    if outcome:
        return ButtonAction.VOTE
    if verb == EDIT:
        return ButtonAction.EDIT
    return ButtonAction.EXTEND if verb.startswith(EXTEND) else None
