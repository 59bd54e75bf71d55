"""Pure Discord modals: the reject-with-reason form and the "Edit & approve" form.

A modal holds at most 5 text inputs (one per action row): a title 45, a label 45, a
`custom_id` 100, a value 4000. An approval with more editable args than that is edited through a
one-time link to the web form instead (`gateway.service.editlinks`).
"""

from __future__ import annotations

from typing import Any

from adapters.discord.render import cut
from gateway.core.models import Approval
from gateway.plugin import argsform

TITLE_MAX = 45
LABEL_MAX = 45
VALUE_MAX = 4000
INPUTS_MAX = 5
REASON_INPUT = "reason"
SHORT, PARAGRAPH = 1, 2


def _input(custom_id: str, label: str, style: int, **more: Any) -> dict[str, Any]:
    field = {"type": 4, "custom_id": custom_id, "label": cut(label, LABEL_MAX), "style": style, **more}
    return {"type": 1, "components": [field]}


def reason(approval: Approval, ref: str) -> dict[str, Any]:
    """The type 9 answer: a modal asking why (required), submitted as `hitl:reason:<ref>`."""
    return {
        "type": 9,
        "data": {
            "custom_id": f"hitl:reason:{ref}",
            "title": cut(f"Reject: {approval.title}", TITLE_MAX),
            "components": [
                _input(REASON_INPUT, "Why reject?", PARAGRAPH, required=True, min_length=1, max_length=1000)
            ],
        },
    }


def fits(approval: Approval) -> bool:
    """Whether every editable arg gets an input of its own (else: the web form)."""
    return 0 < len(argsform.fields(approval)) <= INPUTS_MAX


def edit(approval: Approval, ref: str, seen: str) -> dict[str, Any]:
    """The type 9 answer: one text input per editable arg, as the web form shows it; submitted as
    `hitl:edit.<seen>:<ref>`, where `seen` is the round tag of the args its fields show."""
    rows = []
    for f in argsform.fields(approval)[:INPUTS_MAX]:
        label = f.name + (" (JSON)" if f.is_json else "")
        value = f.value
        if f.options:  # a choice is typed as its label: "USD", "yes"
            label += ": " + " / ".join(shown for _, shown in f.options)
            value = next((shown for v, shown in f.options if v == f.value), f.value)
        style = PARAGRAPH if f.is_json or "\n" in value or len(value) > 80 else SHORT
        rows.append(_input(f.name, label, style, value=value[:VALUE_MAX], required=True, max_length=VALUE_MAX))
    return {
        "type": 9,
        "data": {"custom_id": f"hitl:edit.{seen}:{ref}", "title": "Edit & approve", "components": rows},
    }


def edited(approval: Approval, values: dict[str, str]) -> dict[str, Any] | None:
    """The edited args, or a ValidationError naming `args.<name>` (argsform.read)."""
    form = {}
    for f in argsform.fields(approval):
        if f.name in values:
            form[f.input_name] = _choice(f, values[f.name]) if f.options else values[f.name]
    return argsform.read(approval, form)


def _choice(f: argsform.Field, typed: str) -> str:
    """A typed label as its choice's value (case-insensitive); anything else as typed, for
    `argsform` to refuse as not one of the choices."""
    wanted = typed.strip().casefold()
    return next((v for v, shown in f.options if shown.casefold() == wanted or v == typed.strip()), typed)
