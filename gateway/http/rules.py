"""`POST /v1/rules/evaluate`, for operators: what the rules would answer for a suspend body, with
the named agent's real budgets, suspending nothing (docs/rules.md "Dry runs")."""

from __future__ import annotations

from aiohttp import web

from gateway.http import schemas
from gateway.http.scope import operator
from gateway.http.usecases import RULE_OPS

routes = web.RouteTableDef()


@routes.post("/v1/rules/evaluate")
async def evaluate(request: web.Request) -> web.Response:
    operator(request)  # the rules are the operators': an agent may not probe them for a way through
    facts = schemas.parse_evaluate(await schemas.read_json(request))
    result = await request.config_dict[RULE_OPS].evaluate(facts)
    return web.json_response(result.as_dict())
