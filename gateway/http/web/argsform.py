"""The edit form an approval's schema generates: pure, no script, shared by the web inbox, the
one-time edit links (chat channels) and the link pages of channel adapters.

Each editable top-level arg becomes one field: integers and numbers are number inputs, strings
text inputs, enums and booleans selects; anything else (objects, arrays, null) is a JSON text
area. What comes back is parsed into the edited args (`read`); the service checks them against
the schema and `editable` (gateway.service.edits), so the server validates whatever a browser
sends. Values are the redacted ones people see: an untouched redacted value keeps its raw value.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.core import jsontext
from gateway.core.depth import MAX_DEPTH, text_too_deep
from gateway.core.errors import ValidationError
from gateway.core.models import Approval

PREFIX = "arg."
_LONG = 80


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    kind: str  # integer | number | string | boolean | enum | json
    value: str  # as the input shows it
    options: tuple[tuple[str, str], ...] = ()  # (submitted value: the JSON of the choice, label)
    description: str = ""
    minimum: float | None = None
    maximum: float | None = None

    @property
    def input_name(self) -> str:
        return PREFIX + self.name

    @property
    def is_number(self) -> bool:
        return self.kind in ("integer", "number")

    @property
    def is_decimal(self) -> bool:
        return self.kind == "number"

    @property
    def is_json(self) -> bool:
        """Anything but a number, string, boolean or enum: edited as JSON text."""
        return self.kind == "json"


def _props(approval: Approval) -> Mapping[str, Any]:
    schema = approval.terms.schema if approval.terms else None
    props = (schema or {}).get("properties")
    return props if isinstance(props, dict) else {}


def _kind(prop: Mapping[str, Any], value: Any) -> str:
    if isinstance(prop.get("enum"), list):
        return "enum"
    declared = prop.get("type")
    if declared in ("integer", "number", "string", "boolean"):
        return str(declared)
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string" if isinstance(value, str) else "json"


def _shown(kind: str, value: Any) -> str:
    if kind in ("enum", "boolean") or (kind == "json"):
        return json.dumps(value, ensure_ascii=False, indent=2 if kind == "json" else None)
    return "" if value is None else str(value)


def fields(approval: Approval) -> list[Field]:
    """The form's fields: the editable args the current round votes on, in their order."""
    if approval.terms is None or not approval.terms.allows_edits:
        return []
    props, out = _props(approval), []
    for name, value in approval.current_args.items():
        if not approval.terms.may_change(name):
            continue
        found = props.get(name)
        prop: Mapping[str, Any] = found if isinstance(found, dict) else {}
        kind = _kind(prop, value)
        options: tuple[tuple[str, str], ...] = ()
        if kind == "enum":
            options = tuple(
                (json.dumps(o, ensure_ascii=False), o if isinstance(o, str) else json.dumps(o)) for o in prop["enum"]
            )
        elif kind == "boolean":
            options = (("true", "yes"), ("false", "no"))
        out.append(
            Field(
                name,
                kind,
                _shown(kind, value),
                options,
                str(prop.get("description") or ""),
                prop.get("minimum") if isinstance(prop.get("minimum"), int | float) else None,
                prop.get("maximum") if isinstance(prop.get("maximum"), int | float) else None,
            )
        )
    return out


def _finite(text: str) -> float:
    """A float that JSON can carry: NaN and what overflows to infinity cannot be hashed or stored."""
    value = float(text)
    if value - value != 0.0:
        raise ValueError(f"{text[:40]!r} is not a finite number")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_value(f: Field, text: str) -> Any:
    """A submitted value as JSON, or a ValidationError naming `args.<name>`."""
    where = f"args.{f.name}"
    text = text.strip() if f.kind != "string" else text
    if f.kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValidationError(where, f"must be an integer, got {text[:40]!r}") from None
    if f.kind == "number":
        try:
            return int(text) if text.lstrip("-").isdigit() else _finite(text)
        except ValueError:
            raise ValidationError(where, f"must be a finite number, got {text[:40]!r}") from None
    if f.kind == "string":
        return text
    if text_too_deep(text):  # before the parser recurses over it, as for an API body
        raise ValidationError(where, f"is nested more than {MAX_DEPTH} levels deep")
    try:
        # jsontext: an unpaired surrogate escape parses, then fails where the args are hashed (a 500)
        value = jsontext.check(json.loads(text, parse_constant=_no_constant, parse_float=_finite), "the value")
    except (ValueError, RecursionError) as exc:
        raise ValidationError(where, f"is not valid JSON: {exc}") from None
    if f.kind in ("enum", "boolean") and text not in {v for v, _ in f.options}:
        raise ValidationError(where, "is not one of the choices")
    return value


def read(approval: Approval, form: Mapping[str, str]) -> dict[str, Any] | None:
    """The edited args a submitted form stands for (every arg, the untouched ones as shown), or
    None when the approval allows no edits or the form carries no field."""
    fs = fields(approval)
    if not fs or not any(f.input_name in form for f in fs):
        return None
    edited = dict(approval.current_args)
    for f in fs:
        if f.input_name in form:
            edited[f.name] = parse_value(f, form[f.input_name])
    return edited


def render(fs: list[Field], submitted: Mapping[str, str] | None = None, error_field: str | None = None) -> str:
    """The fields as HTML (labels, inputs, selects, text areas), every value escaped; what was
    `submitted` is kept, and the field an error names is marked invalid."""
    parts = []
    for f in fs:
        esc = html.escape
        value = submitted.get(f.input_name, f.value) if submitted is not None else f.value
        fid = "arg-" + "".join(c if c.isalnum() else "-" for c in f.name)
        bad = error_field in (f"args.{f.name}",) or (error_field or "").startswith(f"args.{f.name}.")
        attrs = f' id="{fid}" name="{esc(f.input_name)}"' + (' aria-invalid="true"' if bad else "")
        if f.kind in ("integer", "number"):
            bounds = "".join(f' {k}="{v}"' for k, v in (("min", f.minimum), ("max", f.maximum)) if v is not None)
            step = "1" if f.kind == "integer" else "any"
            control = f'<input type="number" step="{step}"{bounds}{attrs} value="{esc(value)}">'
        elif f.options:
            opts = "".join(
                f'<option value="{esc(v)}"{" selected" if v == value.strip() else ""}>{esc(label)}</option>'
                for v, label in f.options
            )
            control = f"<select{attrs}>{opts}</select>"
        elif f.kind == "json" or "\n" in value or len(value) > _LONG:
            rows = min(12, max(2, value.count("\n") + 1))
            control = f'<textarea rows="{rows}"{attrs}>{esc(value)}</textarea>'
        else:
            control = f'<input type="text"{attrs} value="{esc(value)}">'
        hint = f' <span class="muted">{esc(f.description)}</span>' if f.description else ""
        kind = " (JSON)" if f.kind == "json" else ""
        parts.append(f'<p class="arg-field"><label for="{fid}">{esc(f.name)}{kind}</label>{hint}<br>{control}</p>')
    return "".join(parts)


__all__ = ["PREFIX", "Field", "fields", "parse_value", "read", "render"]
