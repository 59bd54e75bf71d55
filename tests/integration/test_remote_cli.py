"""`hitl-gateway --url URL` against a real `serve` (SQLite and PostgreSQL): the operator commands
over HTTP with an operator key, no config file and no database credentials where they run."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest

from gateway.testing import TEST_API_KEY, TEST_OPERATOR_KEY
from tests.events.support import Receiver, receiving
from tests.procs import AUTH, Gateway, call, free_port, write_config

pytestmark = pytest.mark.subprocess

FAILING_WORKER = f'[workers.fails]\ncommand = ["{sys.executable}", "-c", "raise SystemExit(3)"]\ntimeout = "20s"\n'


@pytest.fixture
def gateway(tmp_path: Path, store_url: str) -> Iterator[Gateway]:
    port = free_port()
    gw = Gateway(write_config(tmp_path / "gw.toml", store_url, port, FAILING_WORKER), port, tmp_path / "gw.log")
    gw.start()
    yield gw
    gw.stop()


async def cli(*args: str, key: str | None = TEST_OPERATOR_KEY, cwd: Path | None = None) -> tuple[int, str, str]:
    """The CLI as an operator runs it on another machine: no config, no HITL_* but the key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")} | (
        {"HITL_OPERATOR_KEY": key} if key else {}
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gateway",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    out, err = await proc.communicate()
    return proc.returncode or 0, out.decode(), err.decode()


async def _suspend(gw: Gateway, run_id: str, title: str, worker: str | None = None) -> str:
    body = {"run_id": run_id, "step": "pay", "title": title, "args": {"amount": 4200}, "channels": ["web"]}
    async with aiohttp.ClientSession() as http:
        status, data = await call(
            http, "POST", gw.url + "/v1/suspend", json=body | ({"worker": worker} if worker else {}), headers=AUTH
        )
    assert status == 201, data
    return str(data["id"])


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


async def test_operator_commands_over_http(gateway: Gateway, tmp_path: Path) -> None:
    first = await _suspend(gateway, "r-1", "Charge ACME $42.00")
    second = await _suspend(gateway, "r-2", "Refund Initech")
    url = gateway.url

    code, out, err = await cli("--url", url, "approvals", "list", cwd=tmp_path)  # no config in cwd
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "STATUS", "TITLE", "AGE", "RUN/STEP"]
    assert lines[1].startswith(second) and "Refund Initech" in lines[1] and lines[1].split()[-2] in {"0s", "1s", "2s"}
    assert lines[2].startswith(first) and "waiting_approval" in lines[2]

    code, out, _ = await cli("approvals", "list", "--json", "--url", url)  # global options may follow
    assert code == 0 and [a["id"] for a in json.loads(out)["items"]] == [second, first]

    code, out, err = await cli("--url", url, "approvals", "approve", first, "--by", "alice", "--comment", "ok")
    assert code == 0 and out.split()[:4] == [first, "approved", "by", "operator:test"], out + err

    code, out, _ = await cli("--url", url, "approvals", "show", first)
    assert code == 0 and out.splitlines()[0] == f"{first}  approved  Charge ACME $42.00"
    assert "approved by operator:test (operator, api) on behalf of alice: ok" in out
    assert len(out.splitlines()) < 25 and not out.lstrip().startswith("{")  # a summary, not the JSON
    code, out, _ = await cli("--url", url, "approvals", "show", first, "--json")
    shown = json.loads(out)
    assert shown["id"] == first and [e["kind"] for e in shown["events"]][:3] == ["suspended", "card_posted", "approved"]

    code, _, err = await cli("--url", url, "approvals", "reject", first)  # already decided: one line, exit 2
    assert code == 2 and _one_line(err) == "hitl-gateway: 409 already_decided: already approved by operator:test"
    code, out, err = await cli("--url", url, "approvals", "cancel", second, "--reason", "stopped", "--json")
    assert code == 0 and json.loads(out)["status"] == "cancelled", err
    code, _, err = await cli("--url", url, "approvals", "show", "nope")
    assert code == 2 and _one_line(err).startswith("hitl-gateway: 404 not_found:")


async def test_jobs_list_and_retry_over_http(gateway: Gateway) -> None:
    approval_id = await _suspend(gateway, "r-3", "Pay", worker="fails")
    url = gateway.url
    code, _, err = await cli("--url", url, "approvals", "approve", approval_id)
    assert code == 0, err
    for _ in range(200):  # the gateway's worker runs the job, which exits 3: failed for good
        code, out, _ = await cli("--url", url, "jobs", "list", "--status", "failed", "--json")
        if json.loads(out)["items"]:
            break
        await asyncio.sleep(0.1)
    code, out, _ = await cli("--url", url, "jobs", "list", "--status", "failed")
    header, row = out.splitlines()
    assert header.split() == ["APPROVAL", "STATUS", "WORKER", "ATTEMPTS", "AGE", "LAST", "ERROR"]
    assert row.split()[:3] == [approval_id, "failed", "fails"] and "exit status 3" in row
    code, out, err = await cli("--url", url, "jobs", "retry", approval_id, "--by", "alice", "--json")
    assert code == 0 and json.loads(out)["status"] == "queued", err


async def test_an_agent_key_a_missing_key_and_a_wrong_url_are_one_line(gateway: Gateway, tmp_path: Path) -> None:
    approval_id = await _suspend(gateway, "r-4", "Pay")
    code, _, err = await cli("--url", gateway.url, "approvals", "approve", approval_id, key=TEST_API_KEY)
    assert code == 2 and _one_line(err).startswith("hitl-gateway: 403 operator_required: ")
    code, _, err = await cli("--url", gateway.url, "--operator-key", "not-a-key-at-all", "jobs", "list", key=None)
    assert code == 2 and _one_line(err).startswith("hitl-gateway: 401 ")
    code, _, err = await cli("--url", gateway.url, "approvals", "list", key=None)
    assert code == 2 and "--operator-key" in _one_line(err) and "HITL_OPERATOR_KEY" in err

    closed = f"http://127.0.0.1:{free_port()}"
    code, _, err = await cli("--url", closed, "approvals", "list")
    assert code == 1 and _one_line(err).startswith(f"hitl-gateway: cannot reach {closed}")
    code, _, err = await cli("--url", "127.0.0.1:8080", "approvals", "list")  # no scheme: a usage error
    assert code == 2 and "http://" in _one_line(err)
    code, _, err = await cli("--url", gateway.url, "serve", cwd=tmp_path)
    assert code == 2 and "approvals" in _one_line(err)
    async with aiohttp.ClientSession() as http:  # nothing was decided by the refused calls
        _, view = await call(http, "GET", f"{gateway.url}/v1/approvals/{approval_id}", headers=AUTH)
    assert view["status"] == "waiting_approval"


async def test_delegations_add_list_revoke_over_http(gateway: Gateway) -> None:
    url = gateway.url
    code, out, err = await cli(
        "--url", url, "delegations", "add", "--from", "web:alice", "--to", "web:bob", "--until", "14d"
    )
    assert code == 0, err
    made_id, *rest = out.split()
    assert rest[:4] == ["web:bob", "decides", "for", "web:alice"]
    code, out, err = await cli(
        "--url", url, "delegations", "add", "--from", "web:carol", "--to", "web:dan", "--until", "8h", "--json"
    )
    other = json.loads(out)
    assert code == 0 and other["created_by"] == "operator:test" and other["active"], err

    code, out, _ = await cli("--url", url, "delegations", "list")
    header, *rows = out.splitlines()
    assert header.split() == ["ID", "DELEGATOR", "DELEGATE", "STATE", "FROM", "UNTIL", "USES", "REASON"]
    assert [r.split()[:4] for r in rows] == [
        [other["id"], "web:carol", "web:dan", "active"],
        [made_id, "web:alice", "web:bob", "active"],
    ]
    code, out, _ = await cli("--url", url, "delegations", "list", "--for", "web:bob", "--json")
    assert [d["id"] for d in json.loads(out)["items"]] == [made_id]

    # refused by the server: one line naming the option, exit 2, nothing created
    code, out, err = await cli(
        "--url", url, "delegations", "add", "--from", "web:alice", "--to", "web:Alice", "--until", "1d"
    )
    assert code == 2 and out == ""
    assert _one_line(err) == "hitl-gateway: 400 validation_error: --to: must be another person than the delegator"
    code, _, err = await cli("--url", url, "delegations", "add", "--from", "alice", "--to", "web:bob", "--until", "1d")
    assert code == 2 and _one_line(err).startswith("hitl-gateway: 400 validation_error: --from: 'alice' is not an")
    code, _, err = await cli("--url", url, "delegations", "add", "--from", "web:a", "--to", "web:b", "--until", "91d")
    assert (
        code == 2
        and _one_line(err) == "hitl-gateway: 400 validation_error: --until: a delegation lasts at most 90 days"
    )
    code, _, err = await cli("--url", url, "delegations", "list", "--for", "bob")
    assert code == 2 and _one_line(err).startswith("hitl-gateway: 400 validation_error: --for: 'bob' is not an")
    code, _, err = await cli(
        "--url", url, "delegations", "add", "--from", "web:a", "--to", "web:b", "--until", "1d", key=TEST_API_KEY
    )
    assert code == 2 and _one_line(err).startswith("hitl-gateway: 403 operator_required: ")
    code, out, _ = await cli("--url", url, "delegations", "list", "--all", "--json")
    assert [d["id"] for d in json.loads(out)["items"]] == [other["id"], made_id]

    code, out, err = await cli("--url", url, "delegations", "revoke", made_id)
    assert code == 0 and out.startswith(f"{made_id}  revoked by operator:test at "), err
    code, _, err = await cli("--url", url, "delegations", "revoke", "nope")
    assert code == 2 and _one_line(err) == "hitl-gateway: 404 not_found: delegation 'nope' not found"
    code, out, _ = await cli("--url", url, "delegations", "show", made_id, "--json")
    assert [e["kind"] for e in json.loads(out)["events"]] == ["created", "revoked"]
    code, out, _ = await cli("--url", url, "delegations", "list", "--json")
    assert [d["id"] for d in json.loads(out)["items"]] == [other["id"]]


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with receiving(Receiver()) as r:
        yield r


@pytest.fixture
def events_gateway(tmp_path: Path, store_url: str, receiver: Receiver) -> Iterator[Gateway]:
    """A gateway whose webhook (the receiver) gives up on an event a second after it happened."""
    port = free_port()
    hook = f'[[events.webhooks]]\nname = "siem"\nurl = "{receiver.url}"\nsecret = "{receiver.secret}"\n'
    extra = f'[events]\ngive_up_after = "1s"\nmax_backoff = "1s"\ntimeout = "1s"\n{hook}'
    gw = Gateway(write_config(tmp_path / "gw.toml", store_url, port, extra), port, tmp_path / "gw.log")
    gw.start()
    yield gw
    gw.stop()


async def _deliveries(gw: Gateway, approval_id: str) -> tuple[list[tuple[str, int]], list[str]]:
    """The approval's event deliveries (status, attempts) and the kinds of its history."""
    async with aiohttp.ClientSession() as http:
        _, view = await call(http, "GET", f"{gw.url}/v1/approvals/{approval_id}", headers=AUTH)
        _, events = await call(http, "GET", f"{gw.url}/v1/approvals/{approval_id}/events", headers=AUTH)
    rows = [(d["status"], d["attempts"]) for d in view["deliveries"] if d["kind"] == "event"]
    return rows, [e["kind"] for e in events["items"]]


async def test_events_list_and_resend_over_http(events_gateway: Gateway, receiver: Receiver) -> None:
    url = events_gateway.url
    receiver.answers = [(500, {})] * 1000  # the receiver is down: both events are given up
    approval_id = await _suspend(events_gateway, "r-ev", "Pay")
    code, _, err = await cli("--url", url, "approvals", "approve", approval_id)
    assert code == 0, err
    for _ in range(300):
        rows, _ = await _deliveries(events_gateway, approval_id)
        if len(rows) == 2 and all(status == "failed" for status, _ in rows):
            break
        await asyncio.sleep(0.1)
    code, out, err = await cli("--url", url, "events", "list", approval_id)
    assert code == 0, err
    header, *lines = out.splitlines()
    assert header.split() == ["ROW", "WEBHOOK", "STATE", "ATTEMPTS", "EVENT", "KIND", "LAST", "ERROR"]
    assert [(c[1], c[2], c[5]) for c in (line.split() for line in lines)] == [
        ("siem", "given_up", "approval.requested"),
        ("siem", "given_up", "approval.decided"),
    ]
    assert all("HTTP 500" in line for line in lines)
    code, out, _ = await cli("--url", url, "events", "list", approval_id, "--json")
    ids = [d["event_id"] for d in json.loads(out)["items"]]

    # refused by the server: one line naming the problem, exit 2, nothing sent again
    before = await _deliveries(events_gateway, approval_id)
    code, out, err = await cli("--url", url, "events", "resend", approval_id, key=TEST_API_KEY)
    assert code == 2 and out == "" and _one_line(err).startswith("hitl-gateway: 403 operator_required: ")
    code, _, err = await cli("--url", url, "events", "resend", approval_id, "--webhook", "nope")
    assert code == 2
    assert _one_line(err) == "hitl-gateway: 400 validation_error: --webhook: not a configured webhook (known: siem)"
    code, _, err = await cli("--url", url, "events", "resend", "nope")
    assert code == 2 and _one_line(err) == "hitl-gateway: 404 not_found: approval 'nope' not found"
    code, _, err = await cli("--url", url, "events", "list", "nope", key=TEST_API_KEY)
    assert code == 2 and _one_line(err).startswith("hitl-gateway: 404 not_found: ")
    assert await _deliveries(events_gateway, approval_id) == before and "event_resend" not in before[1]

    receiver.answers = []  # back: every event is acknowledged
    code, out, err = await cli("--url", url, "events", "resend", approval_id, "--webhook", "siem", "--by", "alice")
    assert code == 0 and out == f"{approval_id}  siem  2 queued again: {' '.join(ids)}\n", err
    for _ in range(300):
        if len(receiver.accepted) == 2:
            break
        await asyncio.sleep(0.1)
    assert [e["id"] for e in receiver.accepted] == ids  # each once, in order
    code, out, _ = await cli("--url", url, "events", "list", approval_id)
    assert [line.split()[2] for line in out.splitlines()[1:]] == ["delivered", "delivered"]
    code, _, err = await cli("--url", url, "events", "resend", approval_id, "--json")
    assert code == 2 and _one_line(err) == (
        f"hitl-gateway: 409 conflict: no event of {approval_id!r} to any configured webhook was given up: "
        "nothing to resend"
    )
    async with aiohttp.ClientSession() as http:
        _, events = await call(http, "GET", f"{url}/v1/approvals/{approval_id}/events", headers=AUTH)
    (resend,) = [e for e in events["items"] if e["kind"] == "event_resend"]
    assert resend["actor"] == "operator:test" and resend["data"] == {"events": ids, "on_behalf_of": "alice"}
