"""A NUL character in a text field of an API body is a 400 that changes nothing, on either backend.

JSON carries U+0000 as the escape `"\\u0000"`; PostgreSQL's text cannot hold it. An agent's
suspend with one in its title, summary, run id, step, idempotency key or code version, or a step
journaled with one in its error, reached the store and failed there as a 500 (a traceback in the
log per request). A field of any JSON (`args`, `state`, `context`, a step's `output`) is stored
as JSON text, which escapes it, and keeps it.
"""

from __future__ import annotations

from typing import Any

import pytest

from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.testing import FakeClock
from tests.conftest import OPERATOR
from tests.helpers import table_counts

SUSPEND = {"run_id": "r", "step": "s", "title": "t"}


@pytest.fixture
def db_url(store_url: str) -> str:
    return store_url


@pytest.fixture
async def nul_api(aiohttp_client: Any, settings_factory: Any, clock: FakeClock) -> tuple[Any, Runtime]:
    settings = settings_factory()
    rt = Runtime(settings, clock=clock, owner="test")
    return await aiohttp_client(create_app(settings, runtime=rt, background=False)), rt


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("title", "a\x00b"),
        ("run_id", "r\x00"),
        ("step", "s\x00"),
        ("summary", "x\x00"),
        ("idempotency_key", "i\x00"),
        ("code_version", "v\x00"),
        ("approvers", ["web:alice", "web:b\x00b"]),
    ],
)
async def test_a_nul_in_a_suspends_text_is_a_400(nul_api: tuple[Any, Runtime], field: str, value: Any) -> None:
    client, rt = nul_api
    before = await table_counts(rt)
    resp = await client.post("/v1/suspend", json={**SUSPEND, field: value}, headers=OPERATOR)
    assert resp.status == 400, await resp.text()  # before: 500 on PostgreSQL
    error = (await resp.json())["error"]
    assert error["details"]["field"] == field and "NUL" in error["message"]
    assert await table_counts(rt) == before


async def test_a_nul_in_a_steps_error_is_a_400(nul_api: tuple[Any, Runtime], clock: FakeClock) -> None:
    client, _ = nul_api
    now = clock.now().isoformat()
    body = {"status": "failed", "error": "boom\x00", "started_at": now, "finished_at": now}
    resp = await client.put("/v1/runs/r/steps/x", json=body, headers=OPERATOR)
    assert resp.status == 400, await resp.text()  # before: 500 on PostgreSQL
    assert (await resp.json())["error"]["details"]["field"] == "error"


async def test_a_nul_inside_json_fields_is_kept(nul_api: tuple[Any, Runtime], clock: FakeClock) -> None:
    client, _ = nul_api
    body = {**SUSPEND, "args": {"memo\x00": "a\x00b"}, "state": "s\x00", "context": {"k": "\x00"}}
    resp = await client.post("/v1/suspend", json=body, headers=OPERATOR)
    assert resp.status == 201, await resp.text()
    now = clock.now().isoformat()
    step = {"status": "succeeded", "output": ["o\x00"], "started_at": now, "finished_at": now}
    resp = await client.put("/v1/runs/r/steps/y", json=step, headers=OPERATOR)
    assert resp.status == 200 and (await resp.json())["output"] == ["o\x00"]
