"""JSON text that can be stored: refuse an unpaired UTF-16 surrogate where a body is parsed.

`json.loads` turns the escape `"\\ud800"` (alone, not half of a pair) into a Python string that
no UTF-8 encoder accepts: a signed webhook carrying one parsed fine and then failed as a 500 where
its text was hashed, logged or written to the store, possibly after something else was written.
Every channel's webhook parses its body here, and the API's `decode_body` uses the same words,
so such a body is a 400 that changes nothing.
"""

from __future__ import annotations

import json
from typing import Any

SURROGATE_WORDS = "holds an unpaired UTF-16 surrogate escape (\\ud800-\\udfff)"


class LoneSurrogate(ValueError):
    """JSON whose text holds an unpaired surrogate: a ValueError, as for JSON that does not parse,
    so a caller's `except ValueError` refuses it with the rest."""

    def __init__(self, where: str = "the body") -> None:
        super().__init__(f"{where} {SURROGATE_WORDS}")


def storable(value: Any) -> bool:
    """Whether every string in a parsed JSON value (keys too) encodes as UTF-8."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check(value: Any, where: str = "the body") -> Any:
    """`value` itself, or LoneSurrogate: for JSON that a platform's own client library parsed."""
    if not storable(value):
        raise LoneSurrogate(where)
    return value


def may_hold_surrogate(raw: bytes) -> bool:
    """Whether parsing `raw` can give a lone surrogate at all: only from a `\\u` escape, from raw
    UTF-8 surrogate bytes (which start with 0xED), or from another encoding (a NUL byte, a UTF-16
    byte order mark), which `json.loads` decodes with surrogates allowed. A body with none of
    these needs no second pass over what it parsed to."""
    return b"\\u" in raw or b"\xed" in raw or b"\x00" in raw or raw.startswith((b"\xff\xfe", b"\xfe\xff"))


def loads(raw: bytes | str, where: str = "the body") -> Any:
    """`json.loads(raw)`, and LoneSurrogate (a ValueError) when its text holds an unpaired
    surrogate. Measure the nesting first (gateway.core.depth): parsing and this check recurse."""
    value = json.loads(raw)
    # a str holds a surrogate itself only if it cannot be encoded
    plain = ("\\u" not in raw and _encodable(raw)) if isinstance(raw, str) else not may_hold_surrogate(raw)
    return value if plain else check(value, where)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


__all__ = ["SURROGATE_WORDS", "LoneSurrogate", "check", "loads", "may_hold_surrogate", "storable"]
