"""Request ids, API-key auth (principals), and the one place where errors become JSON bodies: the
steps of the one middleware every request passes (gateway.http.front), as plain functions."""

from __future__ import annotations

import logging
import random
import re

from aiohttp import web
from multidict import CIMultiDictProxy

from gateway.core.errors import (
    GatewayError,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    Unauthorized,
    ValidationError,
)
from gateway.core.principals import Principals
from gateway.http.scope import PRINCIPAL

# The body limit the app was built with (web.Application(client_max_size=...)), for the 413's message.
MAX_BODY = web.AppKey("max_body_bytes", int)

log = logging.getLogger("gateway.http")
_RID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_PUBLIC = "/v1/resume"  # and what is under it: the resume token in the path or the body is the credential
_TOKEN_HEADER = "X-HITL-Resume-Token"  # the journal's (gateway.http.runs): it checks the token itself


def error_response(err: GatewayError) -> web.Response:
    return web.json_response(err.to_json(), status=err.status)


def request_id_of(headers: CIMultiDictProxy[str]) -> str:
    """The caller's X-Request-Id if it is a sane one (it goes into every log line), else a new one."""
    given = headers.get("X-Request-Id", "")
    # A request id needs to be unique, not secret: no system call per request.
    return given if given and _RID.match(given) else f"{random.getrandbits(64):016x}"


def authenticate(request: web.Request, principals: Principals) -> None:
    """Bearer keys on /v1/*: each key is one principal (an agent or an operator), put on the
    request for the handlers to scope what it sees and may do (gateway.http.scope). Unauthorized
    (401) without one; `/v1/resume` and `/v1/resume/...` are public (the resume token is the
    credential), and a `/v1/runs/` request that carries a resume token is checked by the journal
    against that run. `request.path` is the decoded path the router matches (`/%761/x` is
    `/v1/x`; an encoded `/` cannot move a path from one of these prefixes into another)."""
    path = request.path
    if not path.startswith("/v1/"):
        return
    if path == _PUBLIC or path.startswith(_PUBLIC + "/"):  # not /v1/resumes, or any later route
        return
    if path.startswith("/v1/runs/") and _TOKEN_HEADER in request.headers:
        return  # no principal on the request: a handler that asks for one gets a 401 (scope.principal)
    scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not credential:
        raise Unauthorized("missing 'Authorization: Bearer <api key>'")
    # header bytes as sent, never a 500
    found = principals.resolve(credential.strip().encode("utf-8", "surrogateescape"))
    if found is None:
        raise Unauthorized("invalid API key")
    request[PRINCIPAL] = found


def refuse_nul(request: web.Request) -> None:
    """A 400 for a NUL character in the path or the query (`%00`): no id, filter or name holds
    one, and PostgreSQL's text cannot store or even compare one (a 500 deep in a use case)."""
    raw = request.raw_path  # the path and the query as sent: a NUL can only come percent-encoded
    if "%00" in raw or "\x00" in raw:
        where = "path" if "%00" in raw.partition("?")[0] else "query"
        raise ValidationError(where, "holds a NUL character (%00)")


def gateway_error(request: web.Request, err: GatewayError) -> web.Response:
    if err.status >= 500:
        log.error("%s %s failed: %s", request.method, request.path, err.message)
    return error_response(err)


def http_error(request: web.Request, exc: web.HTTPException) -> web.Response | None:
    """aiohttp's own 413, 404 and 405 as the API's JSON errors; None for any other (a redirect)."""
    if isinstance(exc, web.HTTPRequestEntityTooLarge):
        limit = request.config_dict.get(MAX_BODY)  # aiohttp keeps its own copy private
        return error_response(PayloadTooLarge(f"the request body is larger than the {limit}-byte limit"))
    if isinstance(exc, web.HTTPNotFound):
        return error_response(NotFound(f"no route for {request.method} {request.path}"))
    if isinstance(exc, web.HTTPMethodNotAllowed):
        allowed = ", ".join(sorted(exc.allowed_methods))
        return error_response(MethodNotAllowed(f"{request.method} is not allowed here (allowed: {allowed})"))
    return None


def crashed(request: web.Request) -> web.Response:
    """A 500 that says no more than the log's request id; called while the exception is handled."""
    log.exception("%s %s crashed", request.method, request.path)
    return error_response(GatewayError("internal error; see the gateway log for this request id"))
