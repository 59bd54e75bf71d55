"""`hitl-gateway audit ...` as a real subprocess, and `GET /v1/audit/export` over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.config import Settings
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.testing import FakeClock
from tests.audit.conftest import SIGNING_KEY, Raw, decided
from tests.conftest import AUTH, OPERATOR
from tests.procs import run_cli, write_config

pytestmark = pytest.mark.subprocess  # every test here starts a process


@pytest.fixture
def db_url(tmp_path: Path) -> str:  # subprocesses: SQLite is enough (the store tests cover both)
    return f"sqlite:///{tmp_path / 'gateway.db'}"


@pytest.fixture
def clock() -> FakeClock:
    """Today, not the default 2030: the CLI checks the events against its real clock (one
    dated after now is a rewrite)."""
    return FakeClock(datetime.now(UTC).replace(microsecond=0))


async def test_cli_verify_export_offline_public_key(runtime: Runtime, clock: FakeClock, tmp_path: Path) -> None:
    ids = await decided(runtime, 2, clock)
    await runtime.audit.seal()
    await runtime.stop()
    config = write_config(
        tmp_path / "gw.toml", runtime.settings.store.url, 0, f'[audit]\nsigning_key = "{SIGNING_KEY}"\n'
    )
    code, out = await run_cli(config, "audit", "public-key")
    assert code == 0 and out.strip() == runtime.audit.public_key
    code, out = await run_cli(config, "audit", "verify")
    assert code == 0 and "audit trail intact: 12 events of 2 approvals, 1 checkpoints" in out, out
    code, out = await run_cli(config, "audit", "checkpoint")
    assert code == 0 and "checkpoint 2: 0 heads sealed, signed" in out, out
    export = tmp_path / "export.jsonl"
    code, out = await run_cli(config, "audit", "export", "--since", "30d", "--out", str(export))
    assert code == 0 and "exported 16 records" in out, out  # 12 events, 2 approvals rows, 2 checkpoints
    key = runtime.audit.public_key
    assert key is not None
    # offline: no config file at all, no database
    code, out = await run_cli(tmp_path / "missing.toml", "audit", "verify", "--file", str(export), "--public-key", key)
    assert code == 0 and "audit trail intact" in out, out
    raw = Raw(runtime.settings.store.url)
    await raw.drop_triggers()
    await raw.run("UPDATE events SET actor = 'web:mallory' WHERE approval_id = $1 AND kind = 'approved'", ids[0])
    code, out = await run_cli(config, "audit", "verify")
    assert code == 1 and f"audit trail broken: approval {ids[0]} seq 3: expected " in out, out
    code, out = await run_cli(config, "audit", "verify", "--since", "not-a-time")
    assert code == 2 and "--since" in out


@pytest.fixture
async def http(
    aiohttp_client: Callable[..., Any], settings: Settings, clock: FakeClock
) -> tuple[TestClient[Any, Any], Runtime]:
    rt = Runtime(settings, clock=clock, owner="test")
    client = await aiohttp_client(create_app(settings, runtime=rt, background=False))
    return client, rt


async def test_http_export_is_for_operators_and_streams(
    http: tuple[TestClient[Any, Any], Runtime], clock: FakeClock
) -> None:
    client, rt = http
    await decided(rt, 2, clock)
    resp = await client.post("/v1/audit/checkpoint", headers=OPERATOR)
    assert resp.status == 200 and (await resp.json())["leaves"] == 2
    resp = await client.get("/v1/audit/export", headers=AUTH)
    assert resp.status == 403
    resp = await client.get("/v1/audit/export", params={"since": "yesterday"}, headers=OPERATOR)
    assert resp.status == 400 and "since" in (await resp.json())["error"]["message"]
    resp = await client.get("/v1/audit/export", params={"since": "2000-01-01T00:00:00Z"}, headers=OPERATOR)
    assert resp.status == 200 and resp.headers["Content-Type"].startswith("application/x-ndjson")
    assert resp.headers.get("Transfer-Encoding") == "chunked"  # streamed, not buffered
    records = [json.loads(line) for line in (await resp.text()).splitlines()]
    assert [r["type"] for r in records].count("event") == 12
    assert records[0]["type"] == "header" and records[-1]["type"] == "checkpoint"
    from gateway.core.audit import load_public_key
    from gateway.service.audit import verify_lines

    assert rt.audit.public_key is not None
    assert verify_lines([json.dumps(r) for r in records], load_public_key(rt.audit.public_key)).ok


@pytest.mark.parametrize("column, value", [("at", -1e19), ("at", 1e12), ("data", "{not json")])
async def test_an_unreadable_event_is_named_not_a_traceback(
    http: tuple[TestClient[Any, Any], Runtime], clock: FakeClock, column: str, value: object
) -> None:
    """A time that is no date, or data that is no JSON, written by a tamperer: the events page
    answers a 500 that names the event and points at `audit verify`, which names it too."""
    client, rt = http
    [victim] = await decided(rt, 1, clock)
    raw = Raw(rt.settings.store.url)
    await raw.drop_triggers()
    event_id = (await raw.run("SELECT MIN(id) FROM events WHERE approval_id = $1", victim))[0][0]
    await raw.run(f"UPDATE events SET {column} = $1 WHERE id = $2", value, event_id)
    resp = await client.get(f"/v1/approvals/{victim}/events", headers=OPERATOR)
    body = await resp.json()
    assert resp.status == 500 and body["error"]["code"] == "stored_data_unreadable", body
    assert f"event {event_id} of approval {victim}" in body["error"]["message"]
    assert "audit verify" in body["error"]["message"]
    problem = (await rt.audit.verify()).problem
    assert problem is not None and problem.approval_id == victim
