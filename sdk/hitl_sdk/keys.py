"""Canonical JSON and deterministic idempotency keys: one definition for the agent and the gateway
(the gateway computes the same default key for a suspend that names none)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from json import encoder
from typing import Any

__all__ = ["args_hash", "canonical_json", "idempotency_key"]

# Built once: `json.dumps` with options builds a new encoder per call, a third of its cost.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
# The C encoder that `_CANONICAL.encode` builds on every call, built once (same options, so the
# same bytes): half the cost of a small dict. No cycle check (markers=None): the stored columns
# and event data are JSON-shaped values; a cyclic one recurses, and `_CANONICAL` then reports it.
_make: Callable[..., Callable[[Any, int], Iterable[str]]] | None = getattr(encoder, "c_make_encoder", None)
_FAST = _make and _make(None, _CANONICAL.default, encoder.encode_basestring, None, ":", ",", True, False, False)


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 kept: equal values give equal strings."""
    if not _FAST:
        return _CANONICAL.encode(value)
    try:
        return "".join(_FAST(value, 0))
    except RecursionError:  # a cycle (or very deep nesting): the checked encoder says which
        return _CANONICAL.encode(value)


def idempotency_key(run_id: str, step: str, args: Any, *, encoded: str | None = None) -> str:
    """sha256(run_id:step:canonical_json(args)), hex. `encoded`: canonical_json(args), if the
    caller already has it."""
    raw = f"{run_id}:{step}:{canonical_json(args) if encoded is None else encoded}"
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def args_hash(args: Any, *, encoded: str | None = None) -> str:
    return hashlib.sha256((canonical_json(args) if encoded is None else encoded).encode("utf-8")).hexdigest()
