"""The one middleware every request of the application passes, first: the connection's head
deadline and the body's (gateway.http.transport), the request id, API-key auth on /v1 and the JSON
error bodies (gateway.http.middleware), in that order.

One coroutine rather than one middleware per concern: aiohttp wraps every middleware around every
request (a partial, a coroutine and an await each), and every time a handler resumes after an
await, the resumption passes down through each of them again. Four requests per full cycle paid
that four times over.

What a request gets, in order:
1. its connection's head clock stops (`HeadDeadline.head_received`; it starts again with the
   next request's first byte once this one is answered);
2. a request id: the caller's `X-Request-Id` if sane, else a new one, for every log line of the
   request and on every answer (a JSON error, a 408, an `HTTPException` such as a redirect);
3. on /v1/*: a Bearer API key (401 without a valid one), except on the public `/v1/resume` and
   under `/v1/resume/`, and on `/v1/runs/*` with a resume token (the journal checks that token);
   then a 400 for a NUL character (`%00`) in the path or the query;
4. the handler, under the body deadline while a body is still arriving (408, connection closed);
5. errors as JSON: a GatewayError its own status, aiohttp's 404, 405 and 413 in the API's words,
   a crash a 500 that points to the log's request id.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from gateway.core.errors import GatewayError
from gateway.core.principals import Principals
from gateway.http.middleware import authenticate, crashed, gateway_error, http_error, refuse_nul, request_id_of
from gateway.http.transport import HeadDeadline, body_within
from gateway.telemetry.logs import request_id

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def front(body_timeout: float, principals: Principals) -> Middleware:
    """The application's only middleware (`body_timeout`: server.body_timeout, in seconds)."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        connection = request.protocol if isinstance(request.protocol, HeadDeadline) else None
        if connection is not None:
            connection.head_received()
        rid = request_id_of(request.headers)
        token = request_id.set(rid)
        try:
            authenticate(request, principals)
            refuse_nul(request)
            if not request.body_exists or request.content.is_eof():  # no body, or all of it is in
                response = await handler(request)
            else:
                response = await body_within(request, handler, body_timeout)
        except GatewayError as err:
            response = gateway_error(request, err)
        except web.HTTPException as exc:
            answer = http_error(request, exc)
            if answer is None:
                exc.headers["X-Request-Id"] = rid
                raise
            response = answer
        except Exception:
            response = crashed(request)
        finally:
            request_id.reset(token)
            if connection is not None:
                connection.request_done()
        response.headers["X-Request-Id"] = rid
        return response

    return middleware


__all__ = ["front"]
