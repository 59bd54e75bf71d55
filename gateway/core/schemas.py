"""A suspend's `args_schema`, made safe to run: it is the agent's, so it is hostile.

- Nothing outside the schema is ever read. References resolve through a `referencing` registry
  whose retrieval refuses every URI, and before that every `$ref` and `$dynamicRef` the
  validator can reach is resolved here: one that is not local (`#...`), does not resolve, or
  points to something that is not a schema is a 400 naming its path (`args_schema.properties.x.$ref`).
- The schema is bounded: MAX_SCHEMA_BYTES of JSON, MAX_SCHEMA_DEPTH levels of nesting and
  MAX_SUBSCHEMAS subschemas (each counted once, however many references reach it).
- Every regular expression runs on re2 (linear time): `pattern`, `patternProperties` and the
  `additionalProperties` that depends on them. A pattern re2 cannot compile (backreferences,
  lookaround) is refused with its path. `format` is not asserted (jsonschema's default), so
  `format: regex` never runs a pattern. jsonschema's `unevaluatedProperties` matches
  `patternProperties` with Python's backtracking `re`, so a schema may not use both.
- A pattern's re2 program is at most MAX_PATTERN_PROGRAM instructions (refused at suspend with
  its path), and one check runs at most MAX_REGEX_WORK of regex work (program size x text
  length, summed over its searches, counted before each search): one re2 search is one C call
  that nothing interrupts, and its cost grows with both.
- Checking args has a time budget (CHECK_BUDGET): every keyword the validator applies, and every
  regex search, first looks at the clock, so a check stops soon after the budget and is a 400
  naming the field. Callers run checks in worker processes, off the event loop, which kill a
  check that still runs past the budget (gateway.service.checks).
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from functools import lru_cache
from typing import Any, TypeVar

import re2
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import SchemaError
from jsonschema.exceptions import ValidationError as SchemaViolation
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable
from referencing.jsonschema import DRAFT202012

from gateway.core.depth import text_too_deep
from gateway.core.errors import ValidationError

log = logging.getLogger("gateway.schemas")
T = TypeVar("T")
MAX_SCHEMA_BYTES = 64 * 1024
MAX_SCHEMA_DEPTH = 32  # JSON nesting levels of the schema document
MAX_SUBSCHEMAS = 1000
CHECK_BUDGET = 2.0  # seconds one check of args against a schema may take
MAX_PATTERN_PROGRAM = 5000  # re2 program size of one pattern (`^[a-z0-9_]{1,64}$` 257, `^.{0,500}$` 4502)
MAX_REGEX_WORK = 300_000_000  # program size x text length, summed over a check's searches (about 1 s at worst)
FIELD = "args_schema"

# Where a 2020-12 schema holds subschemas (as `referencing` crawls it): one, a list, a map.
_ONE = ("additionalProperties", "contains", "contentSchema", "else", "if", "items", "not", "propertyNames", "then")
_ONE_MORE = ("unevaluatedItems", "unevaluatedProperties")
_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
_MAP = ("$defs", "definitions", "dependentSchemas", "patternProperties", "properties")
_REFS = ("$ref", "$dynamicRef")
_JSON_TYPES = {str: "string", int: "number", float: "number", list: "array", type(None): "null"}


def _refuse(uri: str) -> Resource[Any]:
    # never a retrieval: only the schema's own parts resolve (the ignore: attrs' init is untyped)
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


_NO_RETRIEVAL: Registry[Any] = Registry(retrieve=_refuse)  # type: ignore[call-arg]


class _OverBudget(Exception):
    pass


class _TooMuchWork(Exception):
    pass


_deadline: ContextVar[float] = ContextVar("schema_deadline", default=float("inf"))
_work: ContextVar[list[int] | None] = ContextVar("schema_regex_work", default=None)  # [work so far]


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is the agent's error, told in the 400, not logged
    return options


@lru_cache(maxsize=128)  # a searched program keeps its DFA's memory (up to re2's max_mem) while cached
def regex(pattern: str) -> Any:
    """The pattern compiled by re2 (re2.error when it cannot be)."""
    return re2.compile(pattern, _options())


def _search(pattern: str, text: str) -> bool:
    """re2's search, within the check's budget and regex work: one search is one C call that
    nothing interrupts, so its cost (the program's size times the text's length) is counted
    before it runs."""
    if time.monotonic() > _deadline.get():
        raise _OverBudget
    compiled = regex(pattern)
    if (work := _work.get()) is not None:
        work[0] += compiled.programsize * (len(text) + 1)
        if work[0] > MAX_REGEX_WORK:
            raise _TooMuchWork
    return compiled.search(text) is not None


def _pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[SchemaViolation]:
    if validator.is_type(instance, "string") and not _search(patrn, instance):
        yield SchemaViolation(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for patrn, subschema in patterns.items():
        for k, v in instance.items():
            if _search(patrn, k):
                yield from validator.descend(v, subschema, path=k, schema_path=patrn)


def _additional_properties(validator: Any, extra_schema: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    known, patterns = schema.get("properties", {}), list(schema.get("patternProperties", {}))
    extras = sorted(k for k in instance if k not in known and not any(_search(p, k) for p in patterns))
    if validator.is_type(extra_schema, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], extra_schema, path=extra)
    elif not extra_schema and extras:
        verb = "was" if len(extras) == 1 else "were"
        yield SchemaViolation(
            f"Additional properties are not allowed ({', '.join(map(repr, extras))} {verb} unexpected)"
        )


def _frozen(value: Any) -> Any:
    """A hashable key equal for equal JSON values (1 == 1.0, but true is not 1)."""
    if isinstance(value, bool) or value is None:
        return ("b", value)
    if isinstance(value, list):
        return ("l", tuple(map(_frozen, value)))
    if isinstance(value, dict):
        return ("d", frozenset((k, _frozen(v)) for k, v in value.items()))
    return ("v", value)


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[SchemaViolation]:
    # jsonschema compares unsortable items pairwise (quadratic); a set of keys is linear
    if unique and validator.is_type(instance, "array") and len(set(map(_frozen, instance))) < len(instance):
        yield SchemaViolation(f"{instance!r} has non-unique elements")


def _timed(keyword: Callable[..., Any]) -> Callable[..., Any]:
    def applied(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        if time.monotonic() > _deadline.get():
            raise _OverBudget
        return keyword(validator, value, instance, schema)

    return applied


_OURS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "uniqueItems": _unique_items,
}
_KEYWORDS = {name: _timed(_OURS.get(name, f)) for name, f in Draft202012Validator.VALIDATORS.items()}
SafeValidator: Any = validators.extend(Draft202012Validator, _KEYWORDS)


def _dotted(field: str, parts: Any) -> str:
    out = field
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _children(schema: dict[str, Any], path: str) -> Iterator[tuple[str, Any]]:
    for key in (*_ONE, *_ONE_MORE):
        if key in schema:
            yield f"{path}.{key}", schema[key]
    for key in _LIST:
        if isinstance(schema.get(key), list):
            yield from ((f"{path}.{key}[{i}]", s) for i, s in enumerate(schema[key]))
    for key in _MAP:
        if isinstance(schema.get(key), dict):
            yield from ((f"{path}.{key}.{k}", s) for k, s in schema[key].items())


def _resolve(resolver: Any, ref: Any, path: str) -> tuple[str, Any, Any]:
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise ValidationError(
            path, "only a reference within the schema (#/$defs/name, #anchor) resolves; none is fetched"
        )
    try:
        found = resolver.lookup(ref)
    except Unresolvable:
        raise ValidationError(path, f"{ref!r} does not resolve within the schema") from None
    if not isinstance(found.contents, dict | bool):
        kind = _JSON_TYPES.get(type(found.contents), "value")
        raise ValidationError(path, f"{ref!r} points to a JSON {kind}, not a schema")
    return path, found.contents, found.resolver


def _check_patterns(schema: dict[str, Any], path: str) -> None:
    found = [(f"{path}.pattern", schema["pattern"])] if isinstance(schema.get("pattern"), str) else []
    found += [(f"{path}.patternProperties.{p}", p) for p in schema.get("patternProperties", {})]
    for where, patrn in found:
        try:
            size = regex(patrn).programsize
        except re2.error as exc:
            why = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
            raise ValidationError(
                where, f"re2 (the linear-time engine patterns run on) cannot compile it: {why}"
            ) from None
        if size > MAX_PATTERN_PROGRAM:
            raise ValidationError(
                where,
                f"compiles to {size} re2 instructions, over MAX_PATTERN_PROGRAM ({MAX_PATTERN_PROGRAM})",
            )


def _walk(schema: Any) -> None:
    """Every subschema the validator can reach, from the root and through every reference:
    refused when a reference leaves the schema or dangles, a pattern is not re2's, or there are
    more than MAX_SUBSCHEMAS."""
    resolver = _NO_RETRIEVAL.resolver_with_root(DRAFT202012.create_resource(schema))
    lexical: deque[tuple[str, Any, Any]] = deque([(FIELD, schema, resolver)])
    referred: deque[tuple[str, Any, Any]] = deque()
    seen: set[int] = set()
    kinds: dict[str, str] = {}
    while lexical or referred:
        path, sub, resolver = lexical.popleft() if lexical else referred.popleft()
        if not isinstance(sub, dict) or id(sub) in seen:
            continue
        seen.add(id(sub))
        if len(seen) > MAX_SUBSCHEMAS:
            raise ValidationError(FIELD, f"must have at most {MAX_SUBSCHEMAS} subschemas")
        if "$schema" in sub and path != FIELD:
            raise ValidationError(f"{path}.$schema", "only the top level may name a dialect")
        if "$id" in sub:
            resolver = resolver.in_subresource(DRAFT202012.create_resource(sub))
        referred.extend(_resolve(resolver, sub[k], f"{path}.{k}") for k in _REFS if k in sub)
        _check_patterns(sub, path)
        kinds.update((k, path) for k in ("patternProperties", "unevaluatedProperties") if k in sub)
        lexical.extend((p, s, resolver) for p, s in _children(sub, path))
    if len(kinds) == 2:
        raise ValidationError(
            f"{kinds['unevaluatedProperties']}.unevaluatedProperties",
            "cannot be used with patternProperties (jsonschema would match those on a backtracking engine)",
        )


def check_schema(schema: Any, field: str = FIELD) -> None:
    """The schema within its bounds, valid JSON Schema 2020-12, and self-contained; or a
    ValidationError naming the path and the limit."""
    if not isinstance(schema, dict):
        raise ValidationError(field, "must be a JSON Schema object")
    text = json.dumps(schema)
    if len(text.encode()) > MAX_SCHEMA_BYTES:
        raise ValidationError(field, f"must be at most {MAX_SCHEMA_BYTES} bytes of JSON")
    if text_too_deep(text, MAX_SCHEMA_DEPTH):
        raise ValidationError(field, f"must nest at most {MAX_SCHEMA_DEPTH} levels deep")
    try:  # no format checker: its `regex` format would compile every pattern with Python's `re`
        Draft202012Validator.check_schema(schema, format_checker=None)
    except SchemaError as exc:
        raise ValidationError(_dotted(field, exc.path), f"is not a valid JSON Schema 2020-12: {exc.message}") from None
    _walk(schema)


_VALIDATORS: dict[str, Any] = {}  # by canonical schema text: checked and compiled once


def validator(schema: Mapping[str, Any]) -> Any:
    key = json.dumps(schema, sort_keys=True)
    found = _VALIDATORS.get(key)
    if found is None:
        check_schema(schema)  # also a schema stored before these checks existed
        if len(_VALIDATORS) > 256:
            _VALIDATORS.clear()
        found = _VALIDATORS[key] = SafeValidator(schema, registry=_NO_RETRIEVAL)
    return found


def errors(schema: Mapping[str, Any], args: Any, field: str, budget: float = CHECK_BUDGET) -> list[SchemaViolation]:
    """Every violation of `args`, first by path; a ValidationError when the check goes past
    `budget` seconds, or the schema cannot be applied (it never names what the schema refers to)."""
    token, work = _deadline.set(time.monotonic() + budget), _work.set([0])
    try:
        return sorted(validator(schema).iter_errors(args), key=lambda e: (list(map(str, e.path)), e.message))
    except _OverBudget:
        raise ValidationError(field, f"could not be checked against args_schema within {budget:g} s") from None
    except _TooMuchWork:
        raise ValidationError(
            field,
            f"could not be checked against args_schema: its patterns would run over more than {MAX_REGEX_WORK} "
            "units of regex work (MAX_REGEX_WORK: pattern size x text length, summed)",
        ) from None
    except RecursionError:
        raise ValidationError(FIELD, "its references loop without reaching a value") from None
    except (Unresolvable, SchemaError, TypeError, ValueError, OverflowError, MemoryError) as exc:
        log.warning("args_schema could not be applied: %s", type(exc).__name__)
        raise ValidationError(FIELD, "could not be applied to the args") from None
    finally:
        _deadline.reset(token)
        _work.reset(work)


def check_args(schema: Mapping[str, Any] | None, args: Any, field: str = "args") -> None:
    """ValidationError naming the JSON path of the first violation (`args.amount: 5000 is
    greater than the maximum of 4500`), or nothing when `args` validate (or there is no schema)."""
    if schema is None:
        return
    found = errors(schema, args, field)
    if found:
        raise ValidationError(_dotted(field, found[0].path), found[0].message)


def outcome(fn: Callable[..., T], *args: Any) -> tuple[bool, Any]:
    """`fn(*args)` for another process: (True, its value), or (False, (field, problem)) for the
    ValidationError it raised (whose own pickling would lose the field)."""
    try:
        return True, fn(*args)
    except ValidationError as exc:
        return False, (exc.field, exc.message.removeprefix(f"{exc.field}: "))


__all__ = [
    "CHECK_BUDGET",
    "MAX_PATTERN_PROGRAM",
    "MAX_REGEX_WORK",
    "MAX_SCHEMA_BYTES",
    "MAX_SCHEMA_DEPTH",
    "MAX_SUBSCHEMAS",
    "check_args",
    "check_schema",
    "outcome",
]
