"""Pure reading of Bot Framework activities: an `adaptiveCard/action` invoke becomes an
`Execute`, anything else is `NotAnAction`.

Every action's `data` carries `ref = <approval id>.<HMAC>`: a forged or edited reference is
refused before any lookup. Approve and the edit form carry `seen`, the round tag of the args the
card showed. The presser is `from.aadObjectId` (the Entra object id approvers are listed by), in
the tenant the activity names (`conversation.tenantId`, `channelData.tenant.id`: both, when both
are given, must agree).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from adapters.teams.render import REASON_INPUT
from gateway.core import jsontext
from gateway.core.depth import MAX_DEPTH, too_deep
from gateway.core.tokens import TokenSigner
from gateway.plugin import argsform

REF_PURPOSE = "hitl.teams.ref.v1"
INVOKE = "adaptiveCard/action"
VERBS = frozenset({"approve", "reject", "edit", "refresh", "extend", "grant"})


class BadActivity(ValueError):
    """The activity is not one we can read."""


@dataclass(frozen=True, slots=True)
class Execute:
    """An `Action.Execute` on one of our cards (a press, or Teams asking for a person's view)."""

    verb: str
    approval_id: str
    user: str  # the Entra object id
    mri: str  # the Teams user id ('29:…'), what `refresh.userIds` lists
    name: str
    conversation: str
    tenant: str
    activity_id: str
    card_id: str  # the activity the card is (replyToId)
    seen: str | None = None
    reason: str = ""
    inputs: dict[str, str] = field(default_factory=dict)  # 'arg.<name>' → the edit form's values
    arg: str = ""  # extend: the duration ('1h'); grant: the offer ('1h', 'run')


@dataclass(frozen=True, slots=True)
class NotAnAction:
    reason: str


Activity = Execute | NotAnAction


def make_ref(signer: TokenSigner, approval_id: str) -> str:
    return signer.ref(REF_PURPOSE, approval_id)


def check_ref(signer: TokenSigner, ref: str) -> str | None:
    """The approval id if the reference is authentic, else None."""
    return signer.check_ref(REF_PURPOSE, ref)


def load(body: bytes) -> dict[str, Any]:
    """The activity's JSON object (nesting bounded before parsing: it recurses)."""
    if too_deep(body):
        raise BadActivity(f"the activity is nested more than {MAX_DEPTH} levels deep")
    try:
        data = jsontext.loads(body, "the activity")
    except jsontext.LoneSurrogate as exc:
        raise BadActivity(str(exc)) from None
    except (UnicodeDecodeError, ValueError):
        raise BadActivity("the body is not JSON") from None
    if not isinstance(data, dict):
        raise BadActivity("the activity must be a JSON object")
    return data


def _str(data: Any, *path: str) -> str:
    for key in path:
        data = data.get(key) if isinstance(data, Mapping) else None
    return data if isinstance(data, str) else ""


def _input(value: Any) -> str | None:
    """An input's value as the form reads it (Teams sends strings; a number is taken too)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    return value if isinstance(value, str) else None


def tenant_of(activity: Mapping[str, Any]) -> str:
    """The tenant the activity names, lower case; '' when none, or two that disagree."""
    named = (_str(activity, "conversation", "tenantId"), _str(activity, "channelData", "tenant", "id"))
    found = {t.lower() for t in named if t}
    return found.pop() if len(found) == 1 else ""


def conversation_of(activity: Mapping[str, Any]) -> str:
    """The conversation id without a thread's ';messageid=…'."""
    return _str(activity, "conversation", "id").split(";", 1)[0]


def read(activity: Mapping[str, Any], signer: TokenSigner) -> Activity:
    if activity.get("type") != "invoke" or activity.get("name") != INVOKE:
        return NotAnAction(f"activity {str(activity.get('type'))[:30]!r}")
    action = activity.get("value", {}).get("action") if isinstance(activity.get("value"), dict) else None
    if not isinstance(action, dict) or action.get("type") != "Action.Execute":
        raise BadActivity("an adaptiveCard/action invoke without an Action.Execute")
    verb, data = action.get("verb"), action.get("data")
    if not isinstance(verb, str) or verb not in VERBS or not isinstance(data, dict):  # a list: unhashable
        raise BadActivity("not one of our actions")
    approval_id = check_ref(signer, _str(data, "ref"))
    if approval_id is None:
        raise BadActivity("the action's approval reference is not authentic")
    user = _str(activity, "from", "aadObjectId")
    if not user:
        raise BadActivity("from.aadObjectId is missing")
    values = ((k, _input(v)) for k, v in data.items() if k.startswith(argsform.PREFIX))
    inputs = {k: v for k, v in values if v is not None}
    return Execute(
        verb=str(verb),
        approval_id=approval_id,
        user=user,
        mri=_str(activity, "from", "id"),
        name=_str(activity, "from", "name"),
        conversation=conversation_of(activity),
        tenant=tenant_of(activity),
        activity_id=_str(activity, "id"),
        card_id=_str(activity, "replyToId"),
        seen=_str(data, "seen") or None,
        reason=_str(data, REASON_INPUT).strip(),
        inputs=inputs,
        arg=_str(data, "by") if verb == "extend" else _str(data, "grant"),
    )


__all__ = ["BadActivity", "Execute", "NotAnAction", "check_ref", "load", "make_ref", "read", "tenant_of"]
