"""Pure Block Kit of the "Edit & approve" modal and the reading of its submission.

One input block per editable top-level arg (gateway.http.web.argsform decides each field's
kind from the schema): `number_input` for integers and numbers, `static_select` for enums and
booleans, `plain_text_input` for strings and, multiline, for JSON. A value that cannot be read,
or that the service refuses, comes back as `response_action: "errors"` on its block.
"""

from __future__ import annotations

import json
from typing import Any

from adapters.slack.render import METADATA_MAX, MODAL_TITLE_MAX, _plain, fit
from gateway.core.models import Approval
from gateway.plugin import argsform

EDIT_CALLBACK = "hitl:edit"
BLOCK_PREFIX = "arg:"
INPUT = "value"
MAX_BLOCKS = 100  # Slack: a view has at most 100 blocks
_OPTION_MAX = 75  # option text and value


def _element(f: argsform.Field) -> dict[str, Any]:
    if f.is_number:
        el: dict[str, Any] = {
            "type": "number_input",
            "action_id": INPUT,
            "is_decimal_allowed": f.is_decimal,
            "initial_value": f.value,
        }
        for key, bound in (("min_value", f.minimum), ("max_value", f.maximum)):
            if bound is not None:
                el[key] = str(bound)
        return el
    if f.options:
        options = [{"text": _plain(label, _OPTION_MAX), "value": value[:150]} for value, label in f.options[:100]]
        el = {"type": "static_select", "action_id": INPUT, "options": options}
        chosen = next((o for o in options if o["value"] == f.value), None)
        if chosen is not None:
            el["initial_option"] = chosen
        return el
    el = {"type": "plain_text_input", "action_id": INPUT, "initial_value": f.value[:3000]}
    if f.is_json or "\n" in f.value:
        el["multiline"] = True
    return el


def modal(approval: Approval, ref: str, channel_id: str, seen: str = "") -> dict[str, Any]:
    """The modal; `private_metadata` carries the signed reference (as the reason modal does) and
    `seen`, the round tag of the args its fields show: submitted after another edit, refused."""
    metadata = json.dumps({"ref": ref, "channel": channel_id, "seen": seen}, separators=(",", ":"))
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*{fit(approval.title, 2000)}*"}}
    ]
    for f in argsform.fields(approval)[: MAX_BLOCKS - 1]:
        label = f.name + (" (JSON)" if f.is_json else "")
        block = {
            "type": "input",
            "block_id": BLOCK_PREFIX + f.name,
            "label": _plain(label, 2000),
            "element": _element(f),
        }
        if f.description:
            block["hint"] = _plain(f.description, 2000)
        blocks.append(block)
    return {
        "type": "modal",
        "callback_id": EDIT_CALLBACK,
        "private_metadata": metadata[:METADATA_MAX],
        "title": _plain("Edit & approve", MODAL_TITLE_MAX),
        "submit": _plain("Approve", 24),
        "close": _plain("Cancel", 24),
        "blocks": blocks,
    }


def submitted(values: dict[str, Any]) -> dict[str, str]:
    """The modal's `view.state.values` as `arg.<name>` form fields (strings)."""
    out = {}
    for block_id, actions in values.items():
        if not block_id.startswith(BLOCK_PREFIX) or not isinstance(actions, dict):
            continue
        found = actions.get(INPUT)
        state: dict[str, Any] = found if isinstance(found, dict) else {}
        selected = state.get("selected_option")
        value = selected.get("value") if isinstance(selected, dict) else state.get("value")
        if isinstance(value, str):
            out[argsform.PREFIX + block_id[len(BLOCK_PREFIX) :]] = value
    return out


def read(approval: Approval, values: dict[str, Any]) -> dict[str, Any] | None:
    """The edited args, or a ValidationError naming `args.<name>` (argsform.read)."""
    return argsform.read(approval, submitted(values))


def errors(exc_field: str | None, message: str, approval: Approval) -> dict[str, str]:
    """`response_action: errors` keyed by the block of the field an error names (the first
    editable field when it names none of them)."""
    names = [f.name for f in argsform.fields(approval)]
    field = (exc_field or "").removeprefix("args.").split(".")[0].split("[")[0]
    block = field if field in names else (names[0] if names else "")
    text = message.split(": ", 1)[-1] if exc_field and message.startswith(exc_field) else message
    return {BLOCK_PREFIX + block: text[:150]}


__all__ = ["EDIT_CALLBACK", "errors", "modal", "read", "submitted"]
