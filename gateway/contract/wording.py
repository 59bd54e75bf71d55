"""Validate a request body against its model; a problem is a 400 (`ValidationError`) naming the
field, in the words the hand parsers used (the tests and the clients read them).

Of several problems, the 400 names the first in the model's field order (pydantic reports them
all, in that order), after any unknown field, as the hand parsers did.
"""

from __future__ import annotations

from functools import cache
from typing import Any, TypeVar

import pydantic
from pydantic_core import ErrorDetails

from gateway.contract.fields import PROBLEM, Missing
from gateway.contract.requests import RequestBody
from gateway.core.errors import ValidationError

B = TypeVar("B", bound=RequestBody)


@cache
def allowed(model: type[RequestBody]) -> frozenset[str]:
    """Every field a body of `model` may carry (as spelled in JSON: `from` is a field's alias)."""
    return frozenset(info.alias or name for name, info in model.model_fields.items())


def validate(model: type[B], body: dict[str, Any]) -> B:
    names = allowed(model)
    extra = sorted(set(body) - names)
    if extra:
        raise ValidationError(extra[0], f"unknown field (allowed: {', '.join(sorted(names))})")
    try:
        valid = model.model_validate(body)
    except pydantic.ValidationError as exc:
        first = exc.errors(include_url=False, include_context=True)[0]
        field = str(first["loc"][0]) if first["loc"] else "body"
        raise ValidationError(field, _words(model, field, first)) from None
    for attr, shown in _texts(model):
        value = getattr(valid, attr)
        texts = (value,) if isinstance(value, str) else value if isinstance(value, list | tuple) else ()
        if any(isinstance(v, str) and "\x00" in v for v in texts):
            raise ValidationError(shown, "holds a NUL character")
    return valid


@cache
def _texts(model: type[RequestBody]) -> tuple[tuple[str, str], ...]:
    """(attribute, JSON name) of the fields that hold text or a list of texts: PostgreSQL's text
    cannot hold U+0000 (an escaped `\\u0000` in the body), so a title, an id or an error carrying
    one failed as a 500 where it was stored. A field of any JSON (`args`, `state`, `output`) is
    stored as JSON text, which escapes it: those keep what they carry."""
    return tuple((name, info.alias or name) for name, info in model.model_fields.items() if info.annotation is not Any)


def _words(model: type[RequestBody], field: str, error: ErrorDetails) -> str:
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind == PROBLEM:
        return str(ctx["words"])
    if kind == "missing":
        info = model.model_fields.get(field)
        custom = [m for m in (info.metadata if info else ()) if isinstance(m, Missing)]
        return custom[0].words if custom else "is required"
    if kind == "string_type":
        value = error["input"]
        return "is required" if value is None else f"must be a string, got {type(value).__name__}"
    if kind == "string_too_long" or (kind == "too_long" and isinstance(error["input"], str)):
        # ("too_long" when a validator of ours runs first: pydantic checks the length after it)
        return f"must be at most {ctx['max_length']} characters"
    return str(error["msg"])  # a check with no words of ours: pydantic's (a 400 all the same)
