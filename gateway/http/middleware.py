"""Request ids, API-key auth (principals), and the one place where errors become JSON bodies."""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from gateway.core.errors import GatewayError, MethodNotAllowed, NotFound, PayloadTooLarge, Unauthorized
from gateway.core.principals import Principals
from gateway.http.scope import PRINCIPAL
from gateway.telemetry.logs import request_id

# The body limit the app was built with (web.Application(client_max_size=...)), for the 413's message.
MAX_BODY = web.AppKey("max_body_bytes", int)

log = logging.getLogger("gateway.http")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_RID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_PUBLIC_PREFIXES = ("/v1/resume",)


def error_response(err: GatewayError) -> web.Response:
    return web.json_response(err.to_json(), status=err.status)


@web.middleware
async def request_ids(request: web.Request, handler: Handler) -> web.StreamResponse:
    given = request.headers.get("X-Request-Id", "")
    # A request id needs to be unique, not secret: no system call per request.
    rid = given if given and _RID.match(given) else f"{random.getrandbits(64):016x}"
    token = request_id.set(rid)
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        exc.headers["X-Request-Id"] = rid
        raise
    finally:
        request_id.reset(token)
    response.headers["X-Request-Id"] = rid
    return response


@web.middleware
async def errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except GatewayError as err:
        if err.status >= 500:
            log.error("%s %s failed: %s", request.method, request.path, err.message)
        return error_response(err)
    except web.HTTPRequestEntityTooLarge:
        limit = request.config_dict.get(MAX_BODY)  # aiohttp keeps its own copy private
        return error_response(PayloadTooLarge(f"the request body is larger than the {limit}-byte limit"))
    except web.HTTPNotFound:
        return error_response(NotFound(f"no route for {request.method} {request.path}"))
    except web.HTTPMethodNotAllowed as exc:
        return error_response(
            MethodNotAllowed(
                f"{request.method} is not allowed here (allowed: {', '.join(sorted(exc.allowed_methods))})"
            )
        )
    except web.HTTPException:
        raise
    except Exception:
        log.exception("%s %s crashed", request.method, request.path)
        return error_response(GatewayError("internal error; see the gateway log for this request id"))


def api_keys_auth(principals: Principals) -> Middleware:
    """Bearer keys on /v1/*: each key is one principal (an agent or an operator), put on the
    request for the handlers to scope what it sees and may do (gateway.http.scope)."""

    @web.middleware
    async def auth(request: web.Request, handler: Handler) -> web.StreamResponse:
        path = request.path
        token_route = path.startswith("/v1/runs/") and "X-HITL-Resume-Token" in request.headers  # checked there
        if path.startswith("/v1/") and not path.startswith(_PUBLIC_PREFIXES) and not token_route:
            header = request.headers.get("Authorization", "")
            scheme, _, credential = header.partition(" ")
            if scheme.lower() != "bearer" or not credential:
                raise Unauthorized("missing 'Authorization: Bearer <api key>'")
            # header bytes as sent, never a 500
            found = principals.resolve(credential.strip().encode("utf-8", "surrogateescape"))
            if found is None:
                raise Unauthorized("invalid API key")
            request[PRINCIPAL] = found
        return await handler(request)

    return auth
