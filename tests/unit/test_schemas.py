"""The bounds of an agent's `args_schema` (gateway.core.schemas): each refusal names its path and
its limit, references never leave the schema, patterns are re2's, checks stop at their budget."""

from __future__ import annotations

import time
from typing import Any

import pytest

from gateway.core import schemas
from gateway.core.errors import ValidationError


def refused(schema: Any) -> ValidationError:
    with pytest.raises(ValidationError) as exc:
        schemas.check_schema(schema)
    return exc.value


def nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(levels):
        schema = {"not": schema}
    return schema


def test_bytes_depth_and_subschemas_are_bounded_and_named() -> None:
    big = {"description": "x" * schemas.MAX_SCHEMA_BYTES}
    assert f"at most {schemas.MAX_SCHEMA_BYTES} bytes" in refused(big).message
    schemas.check_schema(nested(schemas.MAX_SCHEMA_DEPTH - 1))  # the top-level object is level 1
    error = refused(nested(schemas.MAX_SCHEMA_DEPTH))
    assert error.field == "args_schema" and f"at most {schemas.MAX_SCHEMA_DEPTH} levels" in error.message
    wide = {"anyOf": [{"minimum": i} for i in range(schemas.MAX_SUBSCHEMAS)]}
    error = refused(wide)  # the root is one more
    assert error.field == "args_schema" and f"at most {schemas.MAX_SUBSCHEMAS} subschemas" in error.message
    schemas.check_schema({"anyOf": [{"minimum": i} for i in range(schemas.MAX_SUBSCHEMAS - 1)]})


def test_a_subschema_reached_by_many_references_counts_once() -> None:
    refs = [{"$ref": "#/$defs/n"} for _ in range(schemas.MAX_SUBSCHEMAS // 2)]
    schemas.check_schema({"$defs": {"n": {"type": "integer"}}, "anyOf": refs})


@pytest.mark.parametrize(
    ("schema", "field", "words"),
    [
        ({"$ref": "https://example.com/s.json"}, "args_schema.$ref", "none is fetched"),
        ({"allOf": [{"$ref": "other.json#/x"}]}, "args_schema.allOf[0].$ref", "none is fetched"),
        ({"$id": "https://example.com/", "$ref": "s.json"}, "args_schema.$ref", "none is fetched"),
        ({"$dynamicRef": "#missing"}, "args_schema.$dynamicRef", "does not resolve"),
        ({"$ref": "#/$defs/nope"}, "args_schema.$ref", "does not resolve"),
        ({"$ref": "#/a~2"}, "args_schema.$ref", "does not resolve"),
        ({"x": 3, "$ref": "#/x"}, "args_schema.$ref", "points to a JSON number"),
        (
            {"properties": {"x": {"type": "string"}, "y": {"$ref": "#/properties/x/type"}}},
            "args_schema.properties.y.$ref",
            "a JSON string",
        ),
        ({"required": ["a"], "$ref": "#/required"}, "args_schema.$ref", "points to a JSON array"),
        ({"x": {"$ref": "https://example.com/"}, "$ref": "#/x"}, "args_schema.$ref.$ref", "none is fetched"),
        ({"properties": {"a": {"$schema": "https://example.com/m"}}}, "args_schema.properties.a.$schema", "dialect"),
    ],
)
def test_only_references_within_the_schema_resolve(schema: Any, field: str, words: str) -> None:
    error = refused(schema)
    assert error.field == field and words in error.message, error.message


def test_local_references_anchors_and_embedded_ids_resolve() -> None:
    schemas.check_schema({"$defs": {"n": {"$anchor": "num", "type": "integer"}}, "items": {"$ref": "#num"}})
    embedded = {"$id": "https://example.com/a", "$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n"}
    schemas.check_schema({"$defs": {"a": embedded}, "properties": {"x": {"$ref": "#/$defs/a"}}})
    schemas.check_args({"properties": {"x": {"$ref": "#/$defs/a"}}, "$defs": {"a": embedded}}, {"x": 3})
    with pytest.raises(ValidationError, match="not of type"):
        schemas.check_args({"properties": {"x": {"$ref": "#/$defs/a"}}, "$defs": {"a": embedded}}, {"x": "3"})


def test_patterns_are_re2s_and_linear() -> None:
    error = refused({"properties": {"a": {"pattern": "(x)\\1"}}})
    assert error.field == "args_schema.properties.a.pattern" and "re2" in error.message
    error = refused({"patternProperties": {"^(?!x)": {}}})
    assert error.field == "args_schema.patternProperties.^(?!x)" and "re2" in error.message
    error = refused({"patternProperties": {"^a": {}}, "properties": {"b": {"unevaluatedProperties": False}}})
    assert error.field == "args_schema.properties.b.unevaluatedProperties"
    start = time.monotonic()
    with pytest.raises(ValidationError, match="does not match") as exc:
        schemas.check_args({"properties": {"m": {"pattern": "^(a+)+$"}}}, {"m": "a" * 40 + "!"})
    assert exc.value.field == "args.m" and time.monotonic() - start < 0.5
    schema = {"patternProperties": {"^(a+)+$": {"type": "integer"}}, "additionalProperties": False}
    with pytest.raises(ValidationError, match="unexpected"):
        schemas.check_args(schema, {"a" * 40 + "!": 1})
    schemas.check_args(schema, {"aaa": 1})


def test_unique_items_is_linear_and_keeps_json_equality() -> None:
    schemas.check_args({"uniqueItems": True}, [{"a": i} for i in range(20000)])
    schemas.check_args({"uniqueItems": True}, [1, True, "1", None, False, 0])
    for same in ([1, 1.0], [{"a": [1]}, {"a": [1.0]}], [[True], [True]]):
        with pytest.raises(ValidationError, match="non-unique"):
            schemas.check_args({"uniqueItems": True}, same)


def test_a_check_stops_at_its_budget_and_a_reference_loop_is_a_400() -> None:
    defs: dict[str, Any] = {f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}] * 2} for i in range(40)}
    defs["d40"] = {"type": "string"}
    start = time.monotonic()
    with pytest.raises(ValidationError, match=r"within 0\.2 s") as exc:
        schemas.errors({"$defs": defs, "$ref": "#/$defs/d0"}, 1, "args", budget=0.2)
    assert exc.value.field == "args" and time.monotonic() - start < 1.5
    with pytest.raises(ValidationError, match="loop") as exc:
        schemas.check_args({"$ref": "#"}, 1)
    assert exc.value.field == "args_schema"
