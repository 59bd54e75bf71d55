"""decode_body skips the re-encoding check when it cannot fail: same result, same error, always."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.core.depth import MAX_DEPTH, bytes_depth
from gateway.core.errors import InvalidJSON
from gateway.http.schemas import decode_body


def _reference(raw: bytes) -> dict[str, Any]:
    """read_json's body handling before the fast path, verbatim (with the depth limit first)."""

    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    if not raw.strip():
        raise InvalidJSON("the request body is empty; send a JSON object")
    if bytes_depth(raw) > MAX_DEPTH:
        raise InvalidJSON(f"the request body is nested more than {MAX_DEPTH} levels deep")
    try:
        body = json.loads(raw, parse_constant=no_constant)
        json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except RecursionError:
        raise InvalidJSON("the request body is nested too deeply") from None
    except UnicodeEncodeError:
        raise InvalidJSON("the request body holds an unpaired UTF-16 surrogate escape (\\ud800-\\udfff)") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidJSON(f"the request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise InvalidJSON("the request body must be a JSON object")
    return body


def _outcome(fn: Any, raw: bytes) -> tuple[str, Any]:
    try:
        return "ok", json.dumps(fn(raw), sort_keys=True, ensure_ascii=True)  # ints stay ints, floats exact
    except InvalidJSON as err:
        return "error", err.to_json()


EDGES = [
    b'{"a":1e999}',
    b'{"a":-1E400,"b":"\\ud800"}',
    b'{"a":"\\ud800"}',
    b'{"a":"\\udc00\\u00e9"}',
    b'{"a":"\\ud83d\\ude00"}',
    b'{"a":"\xed\xa0\x80"}',
    b'{"a":"\xed\x9f\xbf"}',
    b'{"a":"\xf0\x9f\x98\x80"}',
    b'{"a":NaN}',
    b'{"a":Infinity}',
    b'{"a":-Infinity}',
    b'{"a":18446744073709551616123}',
    b'{"a":1.5,"a":2}',
    b'{"a":0.1e-400}',
    b'\xef\xbb\xbf{"a":1}',
    '{"a":"\u00e9"}'.encode("utf-16"),
    '{"a":"\u00e9"}'.encode("utf-16-le"),
    '{"a":"\u00e9"}'.encode("utf-32"),
    b'{"a":"\xff"}',
    b'{"a":1,}',
    b"[1, 2]",
    b'"text"',
    b"   ",
    b"\x00",
    b"{" * 600 + b"}" * 600,
    b'{"a":' * 99 + b"1" + b"}" * 99,
    b'{"a":' * 100 + b"1" + b"}" * 100,
    b'{"a":' * 101 + b"1" + b"}" * 101,
    b'{"a":' * 400 + b"1" + b"}" * 400,
    b'{"a":' * 600 + b"1" + b"}" * 600,
    b"[" * 2000 + b"]" * 2000,
    b'{"a":[1e999' + b"]" * 10,
]


@pytest.mark.parametrize("raw", EDGES)
def test_edge_bodies_decode_exactly_as_before(raw: bytes) -> None:
    assert _outcome(decode_body, raw) == _outcome(_reference, raw)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=12,
)
_pieces = st.sampled_from([b"1e999", b"\\ud800", b"\xed\xa0\x80", b"\x00", b"NaN", b"[", b"{", b'"', b"\\u00e9", b"-"])


@settings(max_examples=300, deadline=None)
@given(_json, st.booleans(), st.lists(st.tuples(st.integers(0, 200), _pieces), max_size=3))
def test_random_bodies_decode_exactly_as_before(value: Any, ascii_only: bool, cuts: list[tuple[int, bytes]]) -> None:
    raw = json.dumps({"v": value}, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    for at, piece in cuts:  # damage it: the errors must match too
        raw = raw[:at] + piece + raw[at:]
    assert _outcome(decode_body, raw) == _outcome(_reference, raw)


def test_a_body_builds_no_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """json.loads with options builds a decoder and its scanner for every body: one is kept."""
    built: list[object] = []
    real = json.JSONDecoder.__init__

    def counting(self: json.JSONDecoder, *args: Any, **kwargs: Any) -> None:
        built.append(self)
        real(self, *args, **kwargs)

    monkeypatch.setattr(json.JSONDecoder, "__init__", counting)
    assert decode_body(b'\xef\xbb\xbf{"a": [1.5, "\xc3\xa9"]}') == {"a": [1.5, "\u00e9"]}  # a UTF-8 BOM too
    assert decode_body(b'{"a": "\\u00e9"}') == {"a": "\u00e9"}  # json.dumps' default (ensure_ascii)
    assert decode_body('{"a": 1}'.encode("utf-16")) == {"a": 1}
    assert built == []
