"""Pure rules of approve-with-changes: the suspend's schema and editable fields, an edit's check,
its RFC 6902 patch and the words every card uses to show it.

The schema is JSON Schema 2020-12, checked with the `jsonschema` library within the bounds of
gateway.core.schemas (the schema itself is checked too, at suspend). An edit may change only the
top-level args that `editable` names (or any when it is `true`), and the edited args must validate.
Every refusal is a ValidationError that names the JSON path (`args.amount`), so the API answers 400
and the channels show it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonpatch

from gateway.core.errors import ValidationError
from gateway.core.models import EditTerms
from gateway.core.schemas import check_args, check_schema


def parse_terms(schema: Any, editable: Any) -> EditTerms | None:
    """`args_schema` and `editable` of a suspend, checked; None when it gave neither."""
    if schema is None and editable in (None, False):
        return None
    if schema is not None:
        check_schema(schema)
    return EditTerms(schema, parse_editable(editable))


def terms_checked(schema: Any, editable: Any, args: Any) -> EditTerms | None:
    """`parse_terms`, and the suspend's own args checked against the schema."""
    terms = parse_terms(schema, editable)
    if terms is not None:
        check_args(terms.schema, args)
    return terms


def parse_editable(value: Any, field: str = "editable") -> bool | tuple[str, ...]:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value) and len(value) <= 100:
        return tuple(dict.fromkeys(value))
    raise ValidationError(field, "must be true, false or a list of top-level arg names")


def changed_names(original: Mapping[str, Any], edited: Mapping[str, Any]) -> list[str]:
    """The top-level args an edit adds, removes or changes, in a stable order."""
    names = list(dict.fromkeys([*original, *edited]))
    return [n for n in names if n not in original or n not in edited or original[n] != edited[n]]


def check_edit(terms: EditTerms | None, original: Mapping[str, Any], edited: Any, field: str = "args") -> None:
    """An approver's edited args: allowed, touching only editable fields, and valid."""
    if not isinstance(edited, dict):
        raise ValidationError(field, "must be a JSON object (the edited args)")
    if terms is None or not terms.allows_edits:
        raise ValidationError(field, "this approval does not allow edits (the suspend set no `editable`)")
    for name in changed_names(original, edited):
        if not terms.may_change(name):
            raise ValidationError(f"{field}.{name}", "is not editable")
    check_args(terms.schema, edited, field)


def make_patch(original: Mapping[str, Any], edited: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The RFC 6902 JSON Patch that turns `original` into `edited` (the `jsonpatch` library)."""
    ops: list[dict[str, Any]] = jsonpatch.make_patch(dict(original), dict(edited)).patch
    return ops


def apply_patch(original: Mapping[str, Any], patch: list[dict[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = jsonpatch.apply_patch(dict(original), patch)
    return result


def _shown(value: Any, limit: int = 40) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def change_list(original: Mapping[str, Any], edited: Mapping[str, Any], limit: int = 3) -> str:
    """'amount 4200 → 3900, memo "a" → "b"': the top-level changes, for cards (both redacted)."""
    names = changed_names(original, edited)
    parts = []
    for n in names[:limit]:
        before = _shown(original[n]) if n in original else "(none)"
        after = _shown(edited[n]) if n in edited else "(removed)"
        parts.append(f"{n} {before} → {after}")
    if len(names) > limit:
        parts.append(f"and {len(names) - limit} more")
    return ", ".join(parts)


__all__ = [
    "apply_patch",
    "change_list",
    "changed_names",
    "check_args",
    "check_edit",
    "check_schema",
    "make_patch",
    "parse_editable",
    "parse_terms",
    "terms_checked",
]
