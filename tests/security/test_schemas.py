"""An agent's `args_schema` stays inside the request, against a real `hitl-gateway serve`.

The attacks: a `$ref` to an internal URL (SSRF), to a server that accepts and never answers (a
tarpit that froze the whole gateway), to a `file://` path (its content came back in the 400), to a
closed port, to /etc/passwd, to a pointer that is a string (each a 500); a `pattern` that
backtracks catastrophically; a chain of local references that blows up exponentially. Each is
tried at suspend, on an approver's edit (approve with changes), and through MCP `request_approval`.
Every answer is a fast 400 naming the path, nothing is stored, no socket is ever opened, and
/healthz answers within 1 s throughout.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.mcp.conftest import Stack, approval_server, error_text, mcp_session
from tests.mcp.conftest import stack as stack  # the fixture: a real serve, the fake Telegram
from tests.mcp.conftest import tg_api as tg_api
from tests.procs import Gateway, free_port
from tests.security.conftest import ALICE, BILLING, call, db_counts, db_path, suspend_body

pytestmark = pytest.mark.subprocess  # every test here starts a process

HEALTHZ_WITHIN = 1.0
ANSWER_WITHIN = 8.0  # far under what any of these attacks took on a gateway that ran them


class Listener:
    """A local TCP server that counts the connections it gets. `tarpit`: it accepts and never
    answers (and never closes), like a server built to hang a blocking client."""

    def __init__(self, *, tarpit: bool = False) -> None:
        self.tarpit, self.connections = tarpit, 0
        self._held: list[asyncio.StreamWriter] = []
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Listener:
        self._server = await asyncio.start_server(self._accepted, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for writer in self._held:
            writer.close()
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        if self.tarpit:
            self._held.append(writer)
        else:
            writer.close()


@contextlib.asynccontextmanager
async def healthz_watched(http: aiohttp.ClientSession, gateway: Gateway) -> AsyncIterator[list[float]]:
    """Polls /healthz all along; fails the test if one poll takes HEALTHZ_WITHIN or more."""
    loop, times = asyncio.get_running_loop(), []

    async def poll() -> None:
        while True:
            start = loop.time()
            async with asyncio.timeout(HEALTHZ_WITHIN), http.get(f"{gateway.url}/healthz") as resp:
                assert resp.status == 200
            times.append(loop.time() - start)
            await asyncio.sleep(0.05)

    task = asyncio.create_task(poll())
    try:
        yield times
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert times and max(times) < HEALTHZ_WITHIN, times


async def suspend_refused(
    http: aiohttp.ClientSession, gateway: Gateway, schema: Any, field: str, run_id: str, args: Any = None
) -> dict[str, Any]:
    """A suspend with `schema` is a fast 400 naming `field`, and stores nothing."""
    before = db_counts(gateway)
    body = suspend_body(run_id, args_schema=schema, **({"args": args} if args is not None else {}))
    async with asyncio.timeout(ANSWER_WITHIN):
        status, reply = await call(http, "POST", f"{gateway.url}/v1/suspend", json=body, headers=BILLING)
    assert status == 400, reply
    assert reply["error"]["code"] == "validation_error" and reply["error"]["details"]["field"] == field, reply
    assert db_counts(gateway) == before
    return dict(reply)


def remote_refs(url: str) -> list[tuple[dict[str, Any], str]]:
    """Every way a schema could name `url`, with the path the 400 must name."""
    return [
        ({"properties": {"amount": {"$ref": f"{url}/internal.json"}}}, "args_schema.properties.amount.$ref"),
        ({"$dynamicRef": f"{url}/internal.json#meta"}, "args_schema.$dynamicRef"),
        ({"$id": f"{url}/schemas/", "$ref": "internal.json"}, "args_schema.$ref"),  # relative to $id
        ({"$defs": {"a": {"$id": f"{url}/a"}}, "$ref": f"{url}/a"}, "args_schema.$ref"),
    ]


async def test_a_remote_ref_is_never_fetched(gateway: Gateway) -> None:
    async with Listener() as listener, aiohttp.ClientSession() as http:
        for i, (schema, field) in enumerate(remote_refs(listener.url)):
            reply = await suspend_refused(http, gateway, schema, field, f"ssrf-{i}")
            assert "none is fetched" in reply["error"]["message"]
        await asyncio.sleep(0.2)  # a late connection would still be counted
    assert listener.connections == 0


async def test_a_tarpit_ref_freezes_nothing(gateway: Gateway) -> None:
    async with Listener(tarpit=True) as tarpit, aiohttp.ClientSession() as http, healthz_watched(http, gateway):
        await asyncio.sleep(0.2)
        await suspend_refused(http, gateway, {"$ref": f"{tarpit.url}/slow.json"}, "args_schema.$ref", "tarpit")
        await asyncio.sleep(0.3)
    assert tarpit.connections == 0


async def test_files_closed_ports_and_bad_pointers_are_400s_that_show_nothing(gateway: Gateway, tmp_path: Path) -> None:
    secret = tmp_path / "internal.json"
    secret.write_text(json.dumps({"type": "object", "description": "TOPSECRET-abc123"}))
    cases = [
        ({"$ref": secret.as_uri()}, "args_schema.$ref"),
        ({"properties": {"x": {"$ref": "file:///etc/passwd"}}}, "args_schema.properties.x.$ref"),
        ({"$ref": f"http://127.0.0.1:{free_port()}/closed.json"}, "args_schema.$ref"),
        (
            {"properties": {"x": {"type": "string"}, "y": {"$ref": "#/properties/x/type"}}},
            "args_schema.properties.y.$ref",
        ),
        ({"$ref": "#/$defs/missing"}, "args_schema.$ref"),
        ({"items": {"$ref": "#nowhere"}}, "args_schema.items.$ref"),
        ({"properties": {"x": {"$schema": "http://127.0.0.1:9/meta"}}}, "args_schema.properties.x.$schema"),
    ]
    async with aiohttp.ClientSession() as http:
        for i, (schema, field) in enumerate(cases):
            reply = await suspend_refused(http, gateway, schema, field, f"file-{i}")
            assert "TOPSECRET" not in json.dumps(reply) and "root:" not in json.dumps(reply)
        # a reference within the schema still works
        body = suspend_body(
            "local-ok", args_schema={"properties": {"amount": {"$ref": "#/$defs/n"}}, "$defs": {"n": {}}}
        )
        status, reply = await call(http, "POST", f"{gateway.url}/v1/suspend", json=body, headers=BILLING)
        assert status == 201, reply


BACKTRACKING = {"type": "object", "properties": {"memo": {"type": "string", "pattern": "^(a+)+$"}}}
EVIL_MEMO = "a" * 30 + "!"  # Python's `re` would take minutes; re2 is linear


def exponential_refs(levels: int = 40) -> dict[str, Any]:
    """Local references only, each level trying the next twice: fine for a string at the
    bottom (the first branch matches), 2**levels steps for anything else."""
    defs = {f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]} for i in range(levels)}
    defs[f"d{levels}"] = {"type": "string"}
    return {"type": "object", "$defs": defs, "properties": {"memo": {"$ref": "#/$defs/d0"}}}


async def test_patterns_run_in_linear_time_and_checks_have_a_budget(gateway: Gateway) -> None:
    async with aiohttp.ClientSession() as http, healthz_watched(http, gateway):
        await asyncio.sleep(0.2)
        reply = await suspend_refused(http, gateway, BACKTRACKING, "args.memo", "regex", {"memo": EVIL_MEMO})
        assert "does not match" in reply["error"]["message"]
        reply = await suspend_refused(http, gateway, exponential_refs(), "args", "budget", {"memo": 1})
        assert "within 2 s" in reply["error"]["message"]
        backref = {"properties": {"memo": {"pattern": "(a)\\1"}}}
        reply = await suspend_refused(http, gateway, backref, "args_schema.properties.memo.pattern", "backref")
        assert "re2" in reply["error"]["message"]
        await asyncio.sleep(0.2)


async def _editable(http: aiohttp.ClientSession, gateway: Gateway, run_id: str, schema: dict[str, Any]) -> str:
    body = suspend_body(run_id, args={"memo": "aaa"}, args_schema=schema, editable=["memo"])
    status, reply = await call(http, "POST", f"{gateway.url}/v1/suspend", json=body, headers=BILLING)
    assert status == 201, reply
    return str(reply["id"])


async def _edit_refused(
    http: aiohttp.ClientSession, gateway: Gateway, approval_id: str, memo: Any, field: str
) -> dict[str, Any]:
    before = db_counts(gateway, "approvals", "resume_jobs", "journal")
    body = {"outcome": "approve", "args": {"memo": memo}}
    async with asyncio.timeout(ANSWER_WITHIN):
        status, reply = await call(
            http, "POST", f"{gateway.url}/v1/approvals/{approval_id}/decision", json=body, headers=ALICE
        )
    assert status == 400 and reply["error"]["details"]["field"] == field, reply
    assert db_counts(gateway, "approvals", "resume_jobs", "journal") == before
    _, view = await call(http, "GET", f"{gateway.url}/v1/approvals/{approval_id}", headers=ALICE)
    assert view["status"] == "waiting_approval", view
    return dict(reply)


async def test_an_edit_goes_through_the_same_checks(gateway: Gateway) -> None:
    async with aiohttp.ClientSession() as http:
        regex_id = await _editable(http, gateway, "edit-regex", BACKTRACKING)
        budget_id = await _editable(http, gateway, "edit-budget", exponential_refs())
        async with healthz_watched(http, gateway):
            await asyncio.sleep(0.2)
            await _edit_refused(http, gateway, regex_id, EVIL_MEMO, "args.memo")
            reply = await _edit_refused(http, gateway, budget_id, 1, "args")
            assert "within 2 s" in reply["error"]["message"]
            await asyncio.sleep(0.2)


async def test_an_edit_never_fetches_a_schema_stored_before_these_checks(gateway: Gateway) -> None:
    """An approval stored by an older gateway may hold a remote reference: an edit checked
    against it is refused, and fetches nothing."""
    async with Listener(tarpit=True) as tarpit, aiohttp.ClientSession() as http:
        approval_id = await _editable(http, gateway, "edit-stored", {"type": "object"})
        old = {"schema": {"properties": {"memo": {"$ref": f"{tarpit.url}/m.json"}}}, "editable": ["memo"]}
        with sqlite3.connect(db_path(gateway)) as conn:
            conn.execute("UPDATE approvals SET terms = ? WHERE id = ?", (json.dumps(old), approval_id))
        async with healthz_watched(http, gateway):
            await asyncio.sleep(0.2)
            await _edit_refused(http, gateway, approval_id, "bbb", "args_schema.properties.memo.$ref")
            await asyncio.sleep(0.2)
    assert tarpit.connections == 0


@pytest.mark.subprocess
async def test_mcp_request_approval_goes_through_the_same_checks(stack: Stack) -> None:
    """`hitl-gateway mcp` posts the agent's schema to the gateway: the same refusals, told as a
    tool error, through the MCP SDK's real client."""
    command, env = approval_server(stack)
    base = {"title": "Charge ACME $42", "args": {"memo": EVIL_MEMO}, "wait_seconds": 0}
    async with Listener(tarpit=True) as tarpit, mcp_session(stack.tmp, command, env) as mcp:
        async with healthz_watched(stack.http, stack.gw):
            await asyncio.sleep(0.2)
            for schema, words in [
                ({"$ref": f"{tarpit.url}/internal.json"}, "args_schema.$ref: only a reference within the schema"),
                ({"$ref": "file:///etc/passwd"}, "args_schema.$ref: only a reference within the schema"),
                (BACKTRACKING, "args.memo: 'aaaa"),
            ]:
                async with asyncio.timeout(ANSWER_WITHIN):
                    text = error_text(await mcp.call_tool("request_approval", {**base, "args_schema": schema}))
                assert words in text and "root:" not in text, text
            await asyncio.sleep(0.2)
        assert await stack.approvals() == []
    assert tarpit.connections == 0
