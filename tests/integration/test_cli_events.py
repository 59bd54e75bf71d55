"""`hitl-gateway events list|resend` on a SQLite file (as operator:cli): the same use case, checks,
messages and exit codes as `POST /v1/approvals/{id}/events/resend`; a refusal is one line that
names the problem (`--webhook`, the approval, nothing to resend), exits 2 and changes nothing."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gateway.cli.events import event_rows
from gateway.cli.main import main
from gateway.config import load_settings
from gateway.core.models import OutboxKind, Outcome
from gateway.runtime import Runtime
from gateway.service.approvals import SuspendRequest
from gateway.service.commands import Authority
from gateway.testing import TEST_SECRET, FakeClock
from tests.events.support import SECRET
from tests.procs import free_port


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """Two webhooks whose receiver is down (nothing listens on the port): every try fails."""
    down = f"http://127.0.0.1:{free_port()}/hook"
    hooks = "".join(
        f'[[events.webhooks]]\nname = "{name}"\nurl = "{down}"\nsecret = "{SECRET}"\n' for name in ("siem", "audit")
    )
    path = tmp_path / "gw.toml"
    path.write_text(
        f'[store]\nurl = "sqlite:///{tmp_path / "gw.db"}"\n[security]\nsecret_keys = ["{TEST_SECRET}"]\n'
        f'[events]\ngive_up_after = "1m"\nmax_backoff = "30s"\ntimeout = "1s"\n{hooks}'
    )
    return path


async def _approvals(config: Path) -> tuple[str, str]:
    """Two approvals, each with its events (requested, decided) to both webhooks: the first one's
    tried until every one is given up; the second one's never tried (pending, nothing to send again)."""
    clock = FakeClock(datetime.now(UTC) + timedelta(seconds=5))
    rt = Runtime(load_settings(config, {}), clock=clock, owner="test")
    await rt.start(background=False)
    try:
        ids = []
        for run in ("run-1", "run-2"):
            approval, _ = await rt.service.suspend(SuspendRequest(run, "charge", "Charge ACME"))
            await rt.service.decide(approval.id, Outcome.APPROVE, "web:alice", authority=Authority.OPERATOR)
            ids.append(approval.id)
            while run == "run-1":
                await rt.outbox.drain()
                rows = [r for r in await rt.store.list_outbox(approval.id) if r.kind is OutboxKind.EVENT]
                if not any(r.status.value == "pending" for r in rows):
                    break
                # the next try of those tried (one not tried yet waits for the one before it)
                retry = min(r.next_attempt_at for r in rows if r.status.value == "pending" and r.attempts)
                clock.set(max(clock.now(), retry))
        return ids[0], ids[1]
    finally:
        await rt.stop()


async def _state(config: Path, approval_id: str) -> tuple[Any, Any]:
    """What a refusal must leave as it is: the approval's outbox rows and its history."""
    rt = Runtime(load_settings(config, {}))
    await rt.start(background=False)
    try:
        return await rt.store.list_outbox(approval_id), await rt.store.list_events(approval_id)
    finally:
        await rt.stop()


def _run(config: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()  # what the set-up printed is not the command's (an earlier main's log handler)
    code = main(["--config", str(config), "events", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _refusal(err: str) -> str:
    """The one line a refusal prints (the store's INFO log lines aside)."""
    lines = [line for line in err.splitlines() if line.startswith("hitl-gateway: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_events_list_then_resend_one_webhook_then_the_rest_on_the_store(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    approval_id, _ = asyncio.run(_approvals(config))
    code, out, err = _run(config, capsys, "list", approval_id)
    assert code == 0, err
    header, *rows = out.splitlines()
    assert header.split() == ["ROW", "WEBHOOK", "STATE", "ATTEMPTS", "EVENT", "KIND", "LAST", "ERROR"]
    cells = [r.split() for r in rows]
    assert [c[1:3] for c in cells] == [["siem", "given_up"], ["audit", "given_up"]] * 2
    assert [c[5] for c in cells] == ["approval.requested"] * 2 + ["approval.decided"] * 2
    assert all(int(c[3]) >= 1 and c[4].startswith("evt_") for c in cells)
    code, out, _ = _run(config, capsys, "list", approval_id, "--json")
    listed = json.loads(out)
    assert code == 0 and listed["approval_id"] == approval_id
    siem = [d["event_id"] for d in listed["items"] if d["channel"] == "webhook:siem"]
    audit = [d["event_id"] for d in listed["items"] if d["channel"] == "webhook:audit"]
    assert [d["status"] for d in listed["items"]] == ["failed"] * 4 and len(set(siem)) == 2 and siem == audit

    code, out, err = _run(config, capsys, "resend", approval_id, "--webhook", "siem")
    assert code == 0, err
    assert out == f"{approval_id}  siem  2 queued again: {' '.join(siem)}\n"
    code, out, _ = _run(config, capsys, "list", approval_id)
    assert [r.split()[1:4] for r in out.splitlines()[1:]] == [
        ["siem", "pending", "0"],
        ["audit", "given_up", cells[1][3]],
        ["siem", "pending", "0"],
        ["audit", "given_up", cells[3][3]],
    ]
    code, out, err = _run(config, capsys, "resend", approval_id, "--by", "alice", "--json")  # audit's alone are left
    assert code == 0 and json.loads(out) == {
        "approval_id": approval_id,
        "webhooks": {"audit": audit},
        "status": "pending",
    }, err
    code, _, err = _run(config, capsys, "resend", approval_id)  # nothing given up any more
    assert code == 2
    nothing = f"no event of {approval_id!r} to any configured webhook was given up: nothing to resend"
    assert _refusal(err) == f"hitl-gateway: conflict: {nothing}"
    _, history = asyncio.run(_state(config, approval_id))
    resends = [(e.actor, e.channel, e.data) for e in history if e.kind == "event_resend"]
    assert resends == [
        ("operator:cli", "webhook:siem", {"events": siem}),
        ("operator:cli", "webhook:audit", {"events": audit, "on_behalf_of": "alice"}),
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["{given_up}", "--webhook", "nope"],
            "validation_error: --webhook: not a configured webhook (known: siem, audit)",
        ),
        (["{given_up}", "--webhook", "x" * 65], "validation_error: --webhook: "),
        (["{given_up}", "--by", "x" * 201], "validation_error: --by: "),
        (["nope"], "not_found: approval 'nope' not found"),
        (["{pending}"], "conflict: no event of '{pending}' to any configured webhook was given up: nothing to resend"),
        (["{pending}", "--webhook", "audit"], "conflict: no event of '{pending}' to webhook 'audit' was given up"),
    ],
)
def test_a_refused_events_resend_is_one_line_exit_2_and_changes_nothing(
    config: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    given_up, pending = asyncio.run(_approvals(config))
    before = [asyncio.run(_state(config, a)) for a in (given_up, pending)]
    code, out, err = _run(config, capsys, "resend", *(a.format(given_up=given_up, pending=pending) for a in args))
    assert code == 2 and out == ""
    assert _refusal(err).startswith(f"hitl-gateway: {message.format(pending=pending)}")
    assert [asyncio.run(_state(config, a)) for a in (given_up, pending)] == before


def test_events_list_of_an_unknown_approval_and_of_one_not_tried_yet(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, pending = asyncio.run(_approvals(config))
    code, out, err = _run(config, capsys, "list", "nope")
    assert code == 2 and out == "" and _refusal(err) == "hitl-gateway: not_found: approval 'nope' not found"
    code, out, _ = _run(config, capsys, "list", pending)
    assert code == 0
    assert [r.split()[1:4] for r in out.splitlines()[1:]] == [["siem", "pending", "0"], ["audit", "pending", "0"]] * 2


def test_event_rows_name_each_state_as_the_dashboard_counts_it() -> None:
    base = {"channel": "webhook:siem", "kind": "event", "event_id": "evt_a", "last_error": None}
    items = [
        base | {"id": 1, "status": "pending", "attempts": 0, "event_type": "dev.hitl-gateway.approval.requested"},
        base | {"id": 2, "status": "pending", "attempts": 3, "last_error": "HTTP 500\nboom", "event_type": None},
        base | {"id": 3, "status": "failed", "attempts": 9, "event_type": "dev.hitl-gateway.job.failed"},
        base | {"id": 4, "status": "done", "attempts": 1, "event_type": "dev.hitl-gateway.approval.decided"},
    ]
    headers, rows = event_rows(items)
    assert headers == ["ROW", "WEBHOOK", "STATE", "ATTEMPTS", "EVENT", "KIND", "LAST ERROR"]
    assert [r[2] for r in rows] == ["pending", "failing", "given_up", "delivered"]
    assert rows[0][:2] == ["1", "siem"] and [r[5] for r in rows] == [
        "approval.requested",
        "-",
        "job.failed",
        "approval.decided",
    ]
    assert rows[1][6] == "HTTP 500 boom"
