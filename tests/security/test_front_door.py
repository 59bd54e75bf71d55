"""The one middleware every request passes (gateway.http.front): deadlines, request id, API-key
auth on /v1 and the JSON errors, attacked with path and header tricks over a raw socket (the
bytes as sent, no client normalizing them)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.config import Settings
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.telemetry.logs import request_id
from gateway.testing import TEST_API_KEY, FakeClock

KEY = f"Bearer {TEST_API_KEY}"
TOKEN = "X-HITL-Resume-Token"


async def _crash(request: web.Request) -> web.Response:
    raise RuntimeError("boom: secret-looking detail")


async def _seen_id(request: web.Request) -> web.Response:
    return web.json_response({"request_id": request_id.get()})


async def _moved(request: web.Request) -> web.Response:
    raise web.HTTPSeeOther("/elsewhere")


@pytest.fixture
async def server(settings_factory: Callable[..., Settings], clock: FakeClock) -> AsyncIterator[TestServer]:
    settings = settings_factory(server={"body_timeout": "300ms", "max_body_bytes": 1024})
    app = create_app(settings, runtime=Runtime(settings, clock=clock, owner="test"), background=False)
    app.router.add_get("/test/crash", _crash)
    app.router.add_get("/test/request-id", _seen_id)
    app.router.add_get("/test/moved", _moved)
    server = TestServer(app)
    await server.start_server()
    yield server
    await server.close()


async def _exchange(server: TestServer, head: str, body: bytes = b"", *, within: float = 5) -> bytes:
    """One request as raw bytes (`head`: request line and headers, no blank line); all the answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(head.encode("latin-1") + b"\r\nHost: h\r\nConnection: close\r\n\r\n" + body)
    try:
        async with asyncio.timeout(within):
            return await reader.read()
    finally:
        writer.close()


def _parse(data: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split(" ")[1]), {k.lower(): v for k, v in headers.items()}, body


def test_the_app_has_one_middleware_of_its_own(settings: Settings, clock: FakeClock) -> None:
    """aiohttp wraps each middleware around every request and every resumption of its handler."""
    app = create_app(settings, runtime=Runtime(settings, clock=clock, owner="test"), background=False)
    assert len(app.middlewares) == 1


# (request line and extra headers, expected status, expected error code or None for a success)
TRICKS: list[tuple[str, int, str | None]] = [
    ("GET /v1/approvals HTTP/1.1", 401, "unauthorized"),
    ("GET /v1//approvals HTTP/1.1", 401, "unauthorized"),
    ("GET /v1/approvals/ HTTP/1.1", 401, "unauthorized"),
    ("GET /v1/%61pprovals HTTP/1.1", 401, "unauthorized"),  # decoded before both auth and routing
    ("GET /%761/approvals HTTP/1.1", 401, "unauthorized"),
    ("GET /v1%2Fapprovals HTTP/1.1", 401, "unauthorized"),
    ("GET /v1/approvals?x=/v1/resume HTTP/1.1", 401, "unauthorized"),
    ("GET http://h/v1/approvals HTTP/1.1", 401, "unauthorized"),  # absolute form
    ("GET /V1/approvals HTTP/1.1", 404, "not_found"),  # case matters to the router too: nothing served
    ("GET //v1/approvals HTTP/1.1", 404, "not_found"),
    ("GET /v1/resume/../approvals HTTP/1.1", 404, "not_found"),  # dot segments reach no route
    ("GET /v1/resume%2F..%2Fapprovals HTTP/1.1", 404, "not_found"),
    ("GET /v1/resume/..%2Fapprovals HTTP/1.1", 401, "invalid_token"),  # the resume route, a bad token
    ("GET /v1/resumes HTTP/1.1", 401, "unauthorized"),  # only /v1/resume and under it are public
    ("GET /v1/resume-all HTTP/1.1", 401, "unauthorized"),
    ("POST /v1/resume HTTP/1.1\r\nContent-Length: 0", 400, "invalid_json"),  # public: the body's token
    (f"GET /v1/runs/../approvals HTTP/1.1\r\n{TOKEN}: x", 404, "not_found"),
    (f"GET /v1/runs/%2E%2E/approvals HTTP/1.1\r\n{TOKEN}: x", 404, "not_found"),
    (f"GET /v1/runs/r1/steps HTTP/1.1\r\n{TOKEN}: x", 401, "invalid_token"),  # the journal checks it
    ("GET /v1/runs/r1/steps HTTP/1.1", 401, "unauthorized"),
    (f"GET /v1/approvals HTTP/1.1\r\n{TOKEN}: x", 401, "unauthorized"),  # a token opens /v1/runs/ only
    (f"POST /v1/suspend HTTP/1.1\r\n{TOKEN}: x\r\nContent-Length: 0", 401, "unauthorized"),
    ("GET /v1/approvals HTTP/1.1\r\nAuthorization: Basic abc", 401, "unauthorized"),
    ("GET /v1/approvals HTTP/1.1\r\nAuthorization: Bearer", 401, "unauthorized"),
    ("GET /v1/approvals HTTP/1.1\r\nAuthorization: Bearer ", 401, "unauthorized"),
    ("GET /v1/approvals HTTP/1.1\r\nAuthorization: Bearer wrong", 401, "unauthorized"),
    (f"GET /v1/approvals HTTP/1.1\r\nAuthorization: {KEY}x", 401, "unauthorized"),
    ("GET /v1/approvals HTTP/1.1\r\nAuthorization: Bearer \xff\xfe", 401, "unauthorized"),  # never a 500
    (f"GET /v1/approvals HTTP/1.1\r\nAuthorization: bearer {TEST_API_KEY}", 200, None),
    (f"GET /v1/approvals HTTP/1.1\r\nAuthorization: BEARER  {TEST_API_KEY}  ", 200, None),
    ("GET /v1/nope HTTP/1.1", 401, "unauthorized"),  # no key, no telling which routes exist
    (f"GET /v1/nope HTTP/1.1\r\nAuthorization: {KEY}", 404, "not_found"),
    ("GET /nope HTTP/1.1", 404, "not_found"),
    ("POST /healthz HTTP/1.1\r\nContent-Length: 0", 405, "method_not_allowed"),
    (f"DELETE /v1/suspend HTTP/1.1\r\nAuthorization: {KEY}", 405, "method_not_allowed"),
    ("GET /test/crash HTTP/1.1", 500, "internal_error"),
]


@pytest.mark.parametrize(("head", "status", "code"), TRICKS, ids=[t[0].split("\r\n")[0] for t in TRICKS])
async def test_path_and_header_tricks(server: TestServer, head: str, status: int, code: str | None) -> None:
    got, headers, body = _parse(await _exchange(server, head))
    assert got == status, body
    assert len(headers["x-request-id"]) == 16  # on every answer, an error or not
    if code is not None:
        assert f'"code": "{code}"'.encode() in body, body


async def test_every_answer_carries_the_callers_request_id(server: TestServer) -> None:
    heads = [
        "GET /healthz HTTP/1.1",
        "GET /v1/approvals HTTP/1.1",  # 401
        "GET /nope HTTP/1.1",  # 404
        "POST /healthz HTTP/1.1\r\nContent-Length: 0",  # 405
        "GET /test/crash HTTP/1.1",  # 500
        "GET /test/moved HTTP/1.1",  # an HTTPException that stays one (a redirect)
        "GET / HTTP/1.1",  # the web inbox's redirect to its sign-in page
    ]
    for head in heads:
        status, headers, _ = _parse(await _exchange(server, f"{head}\r\nX-Request-Id: abc-123.X_9"))
        assert headers["x-request-id"] == "abc-123.X_9", (head, status)
    status, headers, _ = _parse(await _exchange(server, "GET /test/moved HTTP/1.1"))
    assert status == 303 and headers["location"] == "/elsewhere" and len(headers["x-request-id"]) == 16


@pytest.mark.parametrize("given", ["a" * 65, "a/b", "a b", "é", "%0a"])
async def test_an_odd_request_id_is_replaced(server: TestServer, given: str) -> None:
    _, headers, _ = _parse(await _exchange(server, f"GET /healthz HTTP/1.1\r\nX-Request-Id: {given}"))
    rid = headers["x-request-id"]
    assert rid != given and len(rid) == 16 and int(rid, 16) >= 0


async def test_the_handler_and_its_logs_see_the_request_id(server: TestServer) -> None:
    _, headers, body = _parse(await _exchange(server, "GET /test/request-id HTTP/1.1\r\nX-Request-Id: rid-7"))
    assert body == b'{"request_id": "rid-7"}' and headers["x-request-id"] == "rid-7"


async def test_a_crash_is_logged_with_its_request_id_and_answered_without_detail(
    server: TestServer, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[str] = []

    class Seen(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(request_id.get())

    probe = Seen(logging.ERROR)
    logging.getLogger("gateway.http").addHandler(probe)
    try:
        with caplog.at_level(logging.ERROR, logger="gateway.http"):
            status, _, body = _parse(await _exchange(server, "GET /test/crash HTTP/1.1\r\nX-Request-Id: crash-1"))
    finally:
        logging.getLogger("gateway.http").removeHandler(probe)
    assert status == 500 and b"boom" not in body and b"request id" in body
    assert seen == ["crash-1"]
    assert any(r.exc_info and "GET /test/crash crashed" in r.getMessage() for r in caplog.records)


async def test_a_body_over_the_limit_is_a_json_413(server: TestServer) -> None:
    body = b"{" + b" " * 2000 + b"}"
    head = f"POST /v1/suspend HTTP/1.1\r\nAuthorization: {KEY}\r\nContent-Length: {len(body)}\r\nX-Request-Id: big"
    status, headers, answer = _parse(await _exchange(server, head, body))
    assert status == 413 and headers["x-request-id"] == "big"
    assert b'"payload_too_large"' in answer and b"1024-byte limit" in answer


async def test_a_slow_body_gets_a_408_with_its_request_id(server: TestServer) -> None:
    head = f"POST /v1/suspend HTTP/1.1\r\nAuthorization: {KEY}\r\nContent-Length: 100\r\nX-Request-Id: slow-1"
    status, headers, answer = _parse(await _exchange(server, head, b'{"run_id"', within=3))
    assert status == 408 and b'"request_timeout"' in answer
    assert headers["x-request-id"] == "slow-1"  # what the access log prints for it
    assert headers["connection"] == "close"


async def test_no_key_no_body_read(server: TestServer) -> None:
    """An unauthenticated request is refused from its head, while its body is still arriving."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"POST /v1/suspend HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n{")
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3)  # before the body's deadline
    finally:
        writer.close()
    assert head.startswith(b"HTTP/1.1 401"), head
