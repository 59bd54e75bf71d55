"""JSON Schemas of the contract's models, for `/openapi.json` and docs/reference/http.md."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from gateway.contract.requests import REQUESTS, InlinePolicy
from gateway.contract.responses import RESPONSES

REF = "#/components/schemas/{model}"


def ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": REF.format(model=model.__name__)}


def components() -> dict[str, Any]:
    """Every model's schema by name (requests as they are validated, responses as sent): a
    copy, the caller's to change."""
    return copy.deepcopy(_components())


@cache
def _components() -> dict[str, Any]:
    models = [(m, "validation") for m in (*REQUESTS, InlinePolicy)] + [(m, "serialization") for m in RESPONSES]
    _, top = models_json_schema(models, ref_template=REF)  # type: ignore[arg-type]
    return {name: _untitled(schema) for name, schema in top["$defs"].items()}


def _untitled(schema: Any) -> Any:
    """Without pydantic's generated `title`s (the property name again); a model keeps its
    docstring as its description."""
    if isinstance(schema, dict):
        out = {k: _untitled(v) for k, v in schema.items() if k != "title" or not isinstance(v, str)}
        if "properties" in schema:  # a property named "title" is a property, not a title
            out["properties"] = {k: _untitled(v) for k, v in schema["properties"].items()}
        return out
    if isinstance(schema, list):
        return [_untitled(v) for v in schema]
    return schema
