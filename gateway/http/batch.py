"""`POST /v1/approvals/decisions`: an operator decides several approvals, each on its own
(gateway.service.batch), as `POST /v1/approvals/{id}/decision` would decide it alone."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from gateway import contract
from gateway.core import rounds
from gateway.core.errors import GatewayError
from gateway.core.models import Outcome
from gateway.core.tokens import TokenSigner
from gateway.http import schemas
from gateway.http.scope import operator
from gateway.http.usecases import SERVICE, SIGNER
from gateway.service.batch import Batch, BatchItem, decide_each
from gateway.service.commands import Authority

routes = web.RouteTableDef()


@routes.post("/v1/approvals/decisions")
async def decide_many(request: web.Request) -> web.Response:
    """Each item is its own decision by the operator whose key this is: an item it may not
    decide, or decided already, or whose `args_hash` is stale, is that item's error (the code a
    single decision answers); the others are decided. A malformed body is a 400, nothing decided."""
    caller = operator(request)
    body = contract.validate(contract.BatchDecisionBody, await schemas.read_json(request))
    items = [parse_item(raw, request.config_dict[SIGNER]) for raw in body.items]
    batch = Batch(caller.identity, Authority.OPERATOR, "api", seen_field="args_hash")
    results = await decide_each(request.config_dict[SERVICE], batch, items)
    return web.json_response({"items": [r.to_api() for r in results]})


def parse_item(raw: dict[str, Any], signer: TokenSigner) -> BatchItem:
    """One item as the service takes it; a bad field is the item's `problem`, not a 400."""
    given = raw.get("id")
    try:
        m = contract.validate(contract.DecisionItem, raw)
    except GatewayError as exc:
        return BatchItem(given if isinstance(given, str) else "", Outcome.REJECT, problem=exc)
    seen = None if m.args_hash is None else rounds.tag_of(signer, m.id, m.args_hash)
    return BatchItem(m.id, Outcome(m.outcome), m.comment, seen)


__all__ = ["routes"]
