"""Pure parsing of Discord interactions and the signed approval reference.

A button's `custom_id` is `hitl:<verb>[.<arg>]:<ref>` with `ref = <approval id>.<HMAC>`: a forged
or edited reference is refused before any lookup. A modal's `custom_id` is the same string as the
button that opened it (`hitl:reason:<ref>`, `hitl:edit.<round tag>:<ref>`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.core import jsontext
from gateway.core.depth import MAX_DEPTH, too_deep
from gateway.core.tokens import TokenSigner
from gateway.plugin import CardVerb

REF_PURPOSE = "hitl.discord.ref.v1"
PING, COMPONENT, MODAL_SUBMIT = 1, 3, 5


VERBS = frozenset(CardVerb)


class UnreadableInteraction(ValueError):
    """The interaction is not one we can read."""


@dataclass(frozen=True, slots=True)
class Origin:
    """Who pressed, where, and how to answer: what every interaction carries."""

    interaction_id: str
    token: str  # the interaction's webhook token (15 minutes)
    user_id: str
    name: str
    guild_id: str  # '' in a DM
    channel_id: str
    message_id: str  # the card pressed ('' when the platform does not say)


@dataclass(frozen=True, slots=True)
class Ping:
    interaction_id: str


@dataclass(frozen=True, slots=True)
class ButtonPress:
    verb: CardVerb
    approval_id: str
    origin: Origin
    arg: str = ""  # approve: the round tag; extend: the duration; grant: '<offer>.<round tag>'


@dataclass(frozen=True, slots=True)
class ModalSubmit:
    verb: CardVerb  # REASON or EDIT
    approval_id: str
    origin: Origin
    values: dict[str, str]  # text input custom_id -> value
    arg: str = ""  # edit: the round tag the modal was opened on


@dataclass(frozen=True, slots=True)
class NotOurs:
    interaction_id: str
    reason: str


Interaction = Ping | ButtonPress | ModalSubmit | NotOurs


def make_ref(signer: TokenSigner, approval_id: str) -> str:
    return signer.ref(REF_PURPOSE, approval_id)


def check_ref(signer: TokenSigner, ref: str) -> str | None:
    """The approval id if the reference is authentic, else None."""
    return signer.check_ref(REF_PURPOSE, ref)


def _str(data: Any, *path: str) -> str:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, str) else ""


def load(body: bytes) -> dict[str, Any]:
    if too_deep(body):  # before parsing: it recurses
        raise UnreadableInteraction(f"the interaction is nested more than {MAX_DEPTH} levels deep")
    try:
        data = jsontext.loads(body, "the interaction")
    except jsontext.LoneSurrogate as exc:
        raise UnreadableInteraction(str(exc)) from None
    except (UnicodeDecodeError, ValueError):
        raise UnreadableInteraction("expected a JSON body") from None
    if not isinstance(data, dict):
        raise UnreadableInteraction("the interaction must be a JSON object")
    return data


def parse(body: bytes, signer: TokenSigner) -> Interaction:
    data = load(body)
    kind, interaction_id = data.get("type"), _str(data, "id")
    if kind == PING:
        return Ping(interaction_id)
    if kind not in (COMPONENT, MODAL_SUBMIT):
        return NotOurs(interaction_id, f"type {kind!r}")
    verb, arg, approval_id = _custom_id(_str(data, "data", "custom_id"), signer)
    if verb is None:
        return NotOurs(interaction_id, "not our component")
    if kind == COMPONENT:
        return ButtonPress(verb, approval_id, _origin(data), arg)
    if verb not in (CardVerb.REASON, CardVerb.EDIT):
        raise UnreadableInteraction("unknown modal")
    return ModalSubmit(verb, approval_id, _origin(data), _values(data), arg)


def _custom_id(custom_id: str, signer: TokenSigner) -> tuple[CardVerb | None, str, str]:
    prefix, _, rest = custom_id.partition(":")
    if prefix != "hitl":
        return None, "", ""
    verb, _, ref = rest.partition(":")
    verb, _, arg = verb.partition(".")
    if (
        verb not in VERBS
        or (verb in (CardVerb.EXTEND, CardVerb.GRANT) and not arg)
        or (arg and verb not in (CardVerb.EXTEND, CardVerb.APPROVE, CardVerb.GRANT, CardVerb.EDIT))
    ):
        raise UnreadableInteraction("unknown component")
    approval_id = check_ref(signer, ref)
    if approval_id is None:
        raise UnreadableInteraction("the component's approval reference is not authentic")
    return CardVerb(verb), arg, approval_id


def _origin(data: dict[str, Any]) -> Origin:
    user = data.get("member", {}).get("user") if isinstance(data.get("member"), dict) else data.get("user")
    user_id = _str(user, "id")
    token = _str(data, "token")
    if not user_id or not token or not _str(data, "id"):
        raise UnreadableInteraction("the interaction names no id, user or token")
    name = _str(user, "global_name") or _str(user, "username")
    return Origin(
        interaction_id=_str(data, "id"),
        token=token,
        user_id=user_id,
        name=name,
        guild_id=_str(data, "guild_id"),
        channel_id=_str(data, "channel_id") or _str(data, "channel", "id"),
        message_id=_str(data, "message", "id"),
    )


def _values(data: dict[str, Any]) -> dict[str, str]:
    """A modal's text inputs: `data.components[].components[]` → {custom_id: value}."""
    out: dict[str, str] = {}
    rows = data.get("data", {}).get("components") if isinstance(data.get("data"), dict) else None
    for row in rows if isinstance(rows, list) else []:
        inner = row.get("components") if isinstance(row, dict) else None
        items = inner if isinstance(inner, list) else [row.get("component")] if isinstance(row, dict) else []
        for item in items:
            key, value = _str(item, "custom_id"), item.get("value") if isinstance(item, dict) else None
            if key and isinstance(value, str):
                out[key] = value
    return out
