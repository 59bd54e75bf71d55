"""`jsontext.loads` skips its second pass only over bodies that cannot hold a lone surrogate:
with or without the skip it answers the same, value or LoneSurrogate."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.core import jsontext


def _slow(raw: bytes | str) -> Any:
    """What `loads` answered before the skip: parse, then always check."""
    return jsontext.check(json.loads(raw))


def _same(raw: bytes | str) -> None:
    try:
        expected: Any = _slow(raw)
    except jsontext.LoneSurrogate:
        with pytest.raises(jsontext.LoneSurrogate):
            jsontext.loads(raw)
        return
    assert jsontext.loads(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        b'{"data": "a|x|y"}',
        b'{"data": "\\ud800"}',  # an escape alone
        b'{"data": "\\ud83d\\ude00"}',  # a pair: fine
        b'{"data": "\xed\xa0\x80"}',  # UTF-8 surrogate bytes (json decodes with surrogatepass)
        b'{"\\udc00": 1}',  # in a key
        '{"data": "\\ud800"}'.encode("utf-16"),  # another encoding, with its byte order mark
        '{"data": "é 💸"}',
        '{"data": "\\ud800"}',
        '{"data": "\ud800"}',  # a str holding the surrogate itself
    ],
)
def test_loads_refuses_exactly_what_the_full_check_refuses(raw: bytes | str) -> None:
    _same(raw)


# text that may hold lone surrogates (st.characters never draws one)
_CODES = st.one_of(st.integers(0xD800, 0xDFFF), st.integers(0, 0x10FFFF))


@given(st.lists(_CODES, max_size=8).map(lambda codes: "".join(map(chr, codes))))
def test_loads_agrees_with_the_full_check_on_any_text(text: str) -> None:
    escaped = json.dumps({"t": text})  # \\u escapes, lone surrogates included
    raw = json.dumps({"t": text}, ensure_ascii=False)
    _same(escaped)
    _same(escaped.encode("ascii"))
    _same(raw)
    _same(raw.encode("utf-8", "surrogatepass"))
