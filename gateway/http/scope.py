"""Who is calling /v1, and what they may see: every API key is a principal (gateway.core.principals).

The auth middleware puts the caller's principal on the request. Handlers then ask:
- `operator(request)`: decisions, cancels, retries and card re-posts need an operator;
- `owner_filter(request)`: the identity to filter lists by (an agent sees only its own; an operator
  the agent `?agent=` names), or None;
- `Service.get(id, principal)`: an approval another agent created is a 404, as if it did not exist.
"""

from __future__ import annotations

from aiohttp import web

from gateway.core.errors import Forbidden, OperatorRequired, Unauthorized
from gateway.core.principals import Principal, agent_namespace
from gateway.http.usecases import SETTINGS

PRINCIPAL = web.RequestKey("principal", Principal)


def principal(request: web.Request) -> Principal:
    """The authenticated caller (the middleware refused the request if there was none)."""
    if PRINCIPAL not in request:
        raise Unauthorized("missing 'Authorization: Bearer <api key>'")
    return request[PRINCIPAL]


def operator(request: web.Request) -> Principal:
    """The caller, if it is an operator; else 403 operator_required naming security.operators."""
    caller = principal(request)
    if caller.is_operator:
        return caller
    if not request.config_dict[SETTINGS].security.principals().has_operators:
        raise OperatorRequired(
            "deciding, cancelling, retrying and re-posting through the API need an operator key, and none is"
            " configured: add one under [security.operators] (agent keys can never decide)"
        )
    raise OperatorRequired(
        f"deciding, cancelling, retrying and re-posting need an operator key (security.operators);"
        f" this key is {caller.identity}"
    )


def owner_filter(request: web.Request) -> str | None:
    """The identity whose records a list shows: the agent's own; for an operator, the agent
    that `?agent=NAME` names, or everything."""
    caller = principal(request)
    asked = request.query.get("agent") or None
    named = None if asked is None else agent_namespace(asked)
    if caller.is_operator:
        return named
    if named is not None and named != caller.identity:
        raise Forbidden("agent: an agent's key lists only its own records (leave `agent` out)")
    return caller.identity


__all__ = ["PRINCIPAL", "operator", "owner_filter", "principal"]
