"""JSON nesting depth, measured before anything recurses over the value.

Parsing, redaction, canonical encoding and templates all recurse; Python's recursion limit turns a
document a few hundred levels deep into a RecursionError (a 500) somewhere past the parser. So
every JSON body is measured first, on its raw bytes and without recursion, and refused with a
400 beyond `MAX_DEPTH` levels (the body's own top-level object is level 1).
"""

from __future__ import annotations

import operator
import re
from itertools import accumulate, count

MAX_DEPTH = 100

# A JSON string, or an unterminated one up to the end: linear (each byte belongs to exactly one
# part, and a match that started always succeeds, so nothing is rescanned).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")  # an opening bracket +1, a closing one -1 (minus 1 each)


def bytes_depth(raw: bytes) -> int:
    """The deepest nesting of `[` and `{` outside strings in `raw` (valid JSON or not)."""
    steps = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS).translate(_STEP)
    # depth after the i-th bracket (1-based) = sum of the first i steps - i; in C, no Python loop.
    return max(map(operator.sub, accumulate(steps), count(1)), default=0)


def too_deep(raw: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether JSON bytes nest deeper than `limit` (bytes with few brackets are not scanned)."""
    return raw.count(b"[") + raw.count(b"{") > limit and bytes_depth(raw) > limit


def text_too_deep(text: str, limit: int = MAX_DEPTH) -> bool:
    """`too_deep` for JSON text (e.g. a canonical encoding already made)."""
    return text.count("[") + text.count("{") > limit and bytes_depth(text.encode("utf-8", "surrogatepass")) > limit


__all__ = ["MAX_DEPTH", "bytes_depth", "text_too_deep", "too_deep"]
