from __future__ import annotations

import re
from typing import Any

from aiohttp import web


def _spec_path(path: str) -> str:
    return re.sub(r"\{(\w+)(:[^}]*)?\}", r"{\1}", path)


async def test_every_route_is_in_openapi(client: Any) -> None:
    spec = await (await client.get("/openapi.json")).json()
    assert spec["openapi"].startswith("3.1")
    app: web.Application = client.server.app
    missing = []
    for route in app.router.routes():
        if route.method in ("HEAD", "OPTIONS", "*"):
            continue
        info = route.resource.get_info() if route.resource else {}
        path = info.get("path") or info.get("formatter") or info.get("prefix")
        if path is None:
            continue
        if route.method.lower() not in spec["paths"].get(_spec_path(path), {}):
            missing.append(f"{route.method} {path}")
    assert not missing, f"routes missing from /openapi.json: {missing}"
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            assert op["responses"], f"{method} {path} documents no response"


async def test_each_body_schema_is_the_parser_s_own(client: Any) -> None:
    """The bodies are generated from the models that validate them: every field the parser
    takes is in the schema (code_version was missing when the schema was written by hand), and
    a closed body says so."""
    from gateway import contract

    spec = await (await client.get("/openapi.json")).json()
    schemas = spec["components"]["schemas"]
    for model in contract.REQUESTS:
        schema = schemas[model.__name__]
        assert set(schema["properties"]) == contract.allowed(model), model.__name__  # as spelled in JSON
        assert schema["additionalProperties"] is False
    suspend = spec["paths"]["/v1/suspend"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    body = schemas[suspend["$ref"].rsplit("/", 1)[1]]
    assert "code_version" in body["properties"]
    assert set(body["required"]) == {"run_id", "step", "title"}
    assert body["properties"]["title"]["maxLength"] == 300
