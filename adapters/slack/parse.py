"""Pure parsing of Slack interactivity payloads and the signed approval reference.

Buttons carry `hitl:<verb>:<ref>` as `action_id` and `<ref>` as `value`, where
`ref = <approval id>.<HMAC>`: a forged or edited reference is refused before any lookup.
Approve carries the round tag of the args its card showed (`hitl:approve.<tag>:<ref>`, and the
Edit modal's `private_metadata` its form's): an older card's Approve has none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from adapters.slack.edit import EDIT_CALLBACK
from adapters.slack.render import REASON_BLOCK, REASON_CALLBACK, REASON_INPUT
from gateway.core import jsontext
from gateway.core.depth import MAX_DEPTH, too_deep
from gateway.core.tokens import TokenSigner
from gateway.plugin import CardVerb

REF_PURPOSE = "hitl.slack.ref.v1"


VERBS = frozenset(CardVerb)


class BadPayload(ValueError):
    """The interaction payload is not one we can read."""


@dataclass(frozen=True, slots=True)
class SlackPress:
    """A button press on a card (`block_actions`)."""

    verb: CardVerb
    approval_id: str
    user_id: str
    channel_id: str
    message_ts: str
    response_url: str
    trigger_id: str
    arg: str = ""  # extend: the duration ('1h'), from `hitl:extend.1h:<ref>`; approve: the round tag;
    # grant: '<offer>.<round tag>' ('1h.abcdefghij')
    teams: tuple[str, ...] = ()  # the workspaces it names (`team.id`, `user.team_id`)


@dataclass(frozen=True, slots=True)
class Submission:
    """The reject-with-reason modal was submitted (`view_submission`)."""

    approval_id: str
    user_id: str
    channel_id: str
    comment: str
    teams: tuple[str, ...] = ()
    trigger_id: str = ""  # unique per interaction, as a press's (a view_submission carries one too)


@dataclass(frozen=True, slots=True)
class EditSubmission:
    """The Edit & approve modal was submitted: `values` is its `view.state.values`."""

    approval_id: str
    user_id: str
    channel_id: str
    values: dict[str, Any]
    seen: str | None = None  # the round tag the modal was opened on (None: an older modal)
    teams: tuple[str, ...] = ()
    trigger_id: str = ""


@dataclass(frozen=True, slots=True)
class Ignored:
    """Something we do not act on (another app's button, a modal closed...)."""

    reason: str


Interaction = SlackPress | Submission | EditSubmission | Ignored


def make_ref(signer: TokenSigner, approval_id: str) -> str:
    return signer.ref(REF_PURPOSE, approval_id)


def check_ref(signer: TokenSigner, ref: str) -> str | None:
    """The approval id if the reference is authentic, else None."""
    return signer.check_ref(REF_PURPOSE, ref)


def payload_of(body: bytes) -> dict[str, Any]:
    """The JSON in a form-encoded `payload=` body."""
    try:
        payload = parse_qs(body.decode("utf-8"), strict_parsing=True)["payload"][0]
        deep = too_deep(payload.encode("utf-8", "surrogateescape"))  # before parsing: it recurses
        data = None if deep else jsontext.loads(payload, "payload")
    except jsontext.LoneSurrogate as exc:
        raise BadPayload(str(exc)) from None
    except (UnicodeDecodeError, ValueError, KeyError, IndexError):
        raise BadPayload("expected a form body with a JSON 'payload' field") from None
    if deep:
        raise BadPayload(f"payload is nested more than {MAX_DEPTH} levels deep")
    if not isinstance(data, dict):
        raise BadPayload("payload must be a JSON object")
    return data


def _str(data: Any, *path: str) -> str:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, str) else ""


def teams_of(data: dict[str, Any]) -> tuple[str, ...]:
    """The workspaces an interaction names: the one it happened in (`team.id`) and the presser's
    own (`user.team_id`: another organisation's, for a guest in a shared channel), upper case."""
    found = (_str(data, "team", "id"), _str(data, "user", "team_id"))
    return tuple(dict.fromkeys(t.upper() for t in found if t))


def parse(body: bytes, signer: TokenSigner) -> Interaction:
    """A webhook body (`payload=<JSON>`), read like a Socket Mode envelope's payload."""
    return read(payload_of(body), signer)


def read(data: dict[str, Any], signer: TokenSigner) -> Interaction:
    """An interaction payload, however it arrived (the webhook's form, a Socket Mode envelope)."""
    kind = data.get("type")
    if kind == "block_actions":
        return _press(data, signer)
    if kind == "view_submission":
        return _submission(data, signer)
    return Ignored(f"type {kind!r}")


def _press(data: dict[str, Any], signer: TokenSigner) -> Interaction:
    acts = data.get("actions")
    if not isinstance(acts, list) or not acts or not isinstance(acts[0], dict):
        raise BadPayload("block_actions without actions")
    action_id, value = _str(acts[0], "action_id"), _str(acts[0], "value")
    prefix, _, rest = action_id.partition(":")
    verb, _, ref = rest.partition(":")
    if prefix != "hitl":
        return Ignored("not our button")
    verb, _, arg = verb.partition(".")
    if (
        verb not in VERBS
        or ref != value
        or (verb in (CardVerb.EXTEND, CardVerb.GRANT) and not arg)
        or (arg and verb not in (CardVerb.EXTEND, CardVerb.APPROVE, CardVerb.GRANT))
    ):
        raise BadPayload("unknown button")
    approval_id = check_ref(signer, value)
    if approval_id is None:
        raise BadPayload("the button's approval reference is not authentic")
    user_id = _str(data, "user", "id")
    if not user_id:
        raise BadPayload("user.id is missing")
    return SlackPress(
        verb=CardVerb(verb),
        approval_id=approval_id,
        user_id=user_id,
        channel_id=_str(data, "channel", "id") or _str(data, "container", "channel_id"),
        message_ts=_str(data, "container", "message_ts") or _str(data, "message", "ts"),
        response_url=_str(data, "response_url"),
        trigger_id=_str(data, "trigger_id"),
        arg=arg,
        teams=teams_of(data),
    )


def _submission(data: dict[str, Any], signer: TokenSigner) -> Interaction:
    view = data.get("view")
    if not isinstance(view, dict) or view.get("callback_id") not in (REASON_CALLBACK, EDIT_CALLBACK):
        return Ignored("not our modal")
    try:
        meta = jsontext.loads(_str(view, "private_metadata"), "private_metadata")
    except jsontext.LoneSurrogate as exc:
        raise BadPayload(str(exc)) from None
    except ValueError:
        raise BadPayload("private_metadata is not JSON") from None
    approval_id = check_ref(signer, _str(meta, "ref"))
    if approval_id is None:
        raise BadPayload("the modal's approval reference is not authentic")
    user_id = _str(data, "user", "id")
    if not user_id:
        raise BadPayload("user.id is missing")
    values = view.get("state", {}).get("values", {}) if isinstance(view.get("state"), dict) else {}
    if not isinstance(values, dict):
        raise BadPayload("view.state.values must be an object")
    if view.get("callback_id") == EDIT_CALLBACK:
        seen = _str(meta, "seen") or None
        trigger = _str(data, "trigger_id")
        return EditSubmission(approval_id, user_id, _str(meta, "channel"), values, seen, teams_of(data), trigger)
    comment = _str(values, REASON_BLOCK, REASON_INPUT, "value").strip()
    return Submission(approval_id, user_id, _str(meta, "channel"), comment, teams_of(data), _str(data, "trigger_id"))
