"""The field types of the HTTP contract: each one's check, its 400 wording and its JSON Schema.

A check that pydantic does natively in the same way (a string's type, its length in code
points) stays native and `gateway.contract.wording` words its error; a check it does
differently (whitespace, which `str.strip` and a regex disagree on; a list's items before its
length; a date-time the way `datetime.fromisoformat` reads it) runs here in Python and raises
`Problem`, whose words are the 400's, verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

from gateway.core.errors import ValidationError
from gateway.core.extend import parse_extension

PROBLEM = "hitl_problem"  # the error type of our own checks: its message is the 400's


def problem(words: str) -> PydanticCustomError:
    return PydanticCustomError(PROBLEM, "{words}", {"words": words})


@dataclass(frozen=True, slots=True)
class Missing:
    """Annotated metadata: the words when the field is absent (else "is required")."""

    words: str


def check(ok: Callable[[Any], bool], words: str) -> BeforeValidator:
    def run(value: Any) -> Any:
        if not ok(value):
            raise problem(words)
        return value

    return BeforeValidator(run)


def _not_blank(value: Any) -> Any:
    if isinstance(value, str) and not value.strip():  # str.strip's idea of whitespace, not a regex's
        raise problem("must not be empty")
    return value


NotBlank = BeforeValidator(_not_blank)


def text(max_len: int, description: str = "", *, required: bool = False, **schema: Any) -> Any:
    """The Field of a string of at most `max_len` code points (required: and not blank)."""
    extra = {"pattern": r"\S", **schema} if required else schema
    return Field(
        min_length=1 if required else None,
        max_length=max_len,
        description=description or None,
        json_schema_extra=extra or None,
    )


def strings(max_items: int, *, at_least_one: bool = False) -> BeforeValidator:
    """A list of non-empty strings (null is the same as absent): the items are checked before
    the length, as the hand parser did (pydantic reports only the length of a long list)."""

    def run(value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise problem("must be a list of non-empty strings")
        if len(value) > max_items:
            raise problem(f"at most {max_items} items")
        if at_least_one and not value:
            raise problem("must name at least one channel")
        return value

    return BeforeValidator(run)


def json_object(words: str) -> BeforeValidator:
    """An optional JSON object; anything else is a 400 in `words`."""
    return check(lambda v: v is None or isinstance(v, dict), words)


Item = Annotated[str, Field(min_length=1)]


Outcome = Annotated[
    Literal["approve", "reject"],
    check(lambda v: v in ("approve", "reject"), "must be 'approve' or 'reject'"),
    Missing("must be 'approve' or 'reject'"),
]
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,6})?([Zz]|[+-]\d{2}:\d{2})$")


def _deadline(raw: Any) -> datetime | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or not _RFC3339.match(raw):  # Python's `$`, as before: not pydantic's regex
        raise problem("must be an RFC 3339 date-time with an offset, like 2031-01-01T11:00:00+01:00")
    try:
        return datetime.fromisoformat(raw.upper().replace("Z", "+00:00"))
    except ValueError:
        raise problem(f"{raw!r} is not a valid date-time") from None


Deadline = Annotated[
    Any,
    AfterValidator(_deadline),
    WithJsonSchema(
        {
            "type": ["string", "null"],
            "format": "date-time",
            "description": "RFC 3339 with an offset; where the named policy's agent_may_set lists timeout",
        }
    ),
]


def _instant(raw: Any) -> datetime:
    found = _deadline(raw)
    if found is None:
        raise problem("is required: an RFC 3339 date-time with an offset, like 2031-01-01T11:00:00+01:00")
    return found


_AT = "RFC 3339 with an offset, like 2031-01-01T11:00:00+01:00"
Since = Annotated[
    Any,
    AfterValidator(_deadline),
    WithJsonSchema({"type": ["string", "null"], "format": "date-time", "description": f"{_AT}; default: now"}),
]
Until = Annotated[
    Any,
    AfterValidator(_instant),
    Missing("is required: an RFC 3339 date-time with an offset, like 2031-01-01T11:00:00+01:00"),
    WithJsonSchema({"type": "string", "format": "date-time", "description": _AT}),
]


def _duration(raw: Any) -> Any:
    if raw is None:
        raise problem("is required, like '1h'")
    try:
        return parse_extension(raw)
    except ValidationError as exc:  # the core's words, without its "duration: " prefix
        raise problem(exc.message.split(": ", 1)[1]) from None


Duration = Annotated[
    Any,
    AfterValidator(_duration),
    Missing("is required, like '1h'"),
    WithJsonSchema({"type": "string", "examples": ["1h"], "description": "one of the policy's `extend`"}),
]


def _stamp(raw: Any) -> Any:
    """A step's date-time: what `datetime.fromisoformat` reads (str() of anything, as before)."""
    try:
        value = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    except ValueError:
        raise problem("must be an ISO 8601 date-time with a timezone") from None
    if value.tzinfo is None:
        raise problem("must have a timezone")
    return value


Stamp = Annotated[
    Any,
    AfterValidator(_stamp),
    Missing("must be an ISO 8601 date-time with a timezone"),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
By = Annotated[str | None, text(200, "whom the operator acts for: kept as on_behalf_of, never as who decided")]
Comment = Annotated[str | None, text(2000)]
