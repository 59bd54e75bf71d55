"""The audit chain covers the present, against a real `hitl-gateway serve` and the real CLI.

- A database administrator deletes every checkpoint and its leaves, turns a rejection into an
  approval in the events (rechained) and in the row: with a signing key, `audit verify` exits 1
  naming an event that nothing seals, minutes after it was written (before: "intact ... not yet
  proven", exit 0, for a quarter of an hour).
- The approvals row is checked against its events: a rewritten status or decider is a break
  naming the approval and the field, in the database and in `GET /v1/audit/export`.
- No false break: a gateway stopped on purpose seals before it exits; one killed and started a
  week later seals at start, before it serves. Without a key the old "not yet proven" stays.

Time passing is simulated by moving every stored date back (and rechaining, as the events were
never sealed or their seals are deleted), never by sleeping.
"""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from tests.audit.conftest import SIGNING_KEY, Raw
from tests.procs import AUTH, OPERATOR, Gateway, free_port, run_cli, write_config

pytestmark = pytest.mark.subprocess  # every test here starts a process

MINUTES = 600.0  # past checkpoint_every (1m) + SEALER_GRACE (5m), within the old 1m + 15m
WEEK = 7 * 86400.0


def _gateway(tmp_path: Path, *, key: bool = True, every: str = "1m") -> tuple[Gateway, Raw]:
    port = free_port()
    audit = f'[audit]\ncheckpoint_every = "{every}"\n' + (f'signing_key = "{SIGNING_KEY}"\n' if key else "")
    url = f"sqlite:///{tmp_path / 'gw.db'}"
    config = write_config(tmp_path / "gw.toml", url, port, audit + '[workers.agent]\ncommand = ["true"]\n')
    return Gateway(config, port, tmp_path / "gw.log"), Raw(url)


async def _decided(gw: Gateway) -> tuple[str, str]:
    """Two approvals over HTTP: the first rejected by the operator, the second approved."""
    ids = []
    async with aiohttp.ClientSession() as http:
        for run in ("refund", "charge"):
            body = {"run_id": run, "step": "pay", "title": f"{run} 900 EUR", "args": {"amount": 900}}
            async with http.post(f"{gw.url}/v1/suspend", json=body, headers=AUTH) as resp:
                assert resp.status == 201, await resp.text()
                ids.append((await resp.json())["id"])
        for approval_id, outcome in zip(ids, ("reject", "approve"), strict=True):
            url = f"{gw.url}/v1/approvals/{approval_id}/decision"
            async with http.post(url, json={"outcome": outcome}, headers=OPERATOR) as resp:
                assert resp.status == 200, await resp.text()
    return ids[0], ids[1]


async def _age(raw: Raw, seconds: float) -> None:
    """`seconds` pass: every event dated that much earlier, each chain rehashed over its dates
    (only valid where no checkpoint seals them: deleted, or never written)."""
    await raw.run("UPDATE events SET at = at - $1", seconds)
    for (approval_id,) in await raw.run("SELECT DISTINCT approval_id FROM events"):
        await raw.rechain(approval_id)


async def _flip(raw: Raw, victim: str) -> None:
    """Every checkpoint deleted; the rejection made an approval, in the events and in the row."""
    await raw.run("DELETE FROM audit_leaves")
    await raw.run("DELETE FROM audit_checkpoints")
    await raw.run("UPDATE events SET kind = 'approved' WHERE approval_id = $1 AND kind = 'rejected'", victim)
    await raw.run(
        "UPDATE approvals SET status = 'approved', decision = replace(decision, '\"reject\"', '\"approve\"')"
        " WHERE id = $1",
        victim,
    )


async def test_deleted_checkpoints_and_a_flipped_rejection_fail_verify(tmp_path: Path) -> None:
    gw, raw = _gateway(tmp_path)
    gw.start()
    rejected, _ = await _decided(gw)
    async with aiohttp.ClientSession() as http, http.post(f"{gw.url}/v1/audit/checkpoint", headers=OPERATOR) as resp:
        assert resp.status == 200  # what its minute timer does
    assert gw.terminate() == 0
    code, out = await run_cli(gw.config, "audit", "verify")
    assert code == 0 and "audit trail intact" in out, out
    await raw.drop_triggers()
    await _flip(raw, rejected)
    await _age(raw, MINUTES)
    code, out = await run_cli(gw.config, "audit", "verify")
    assert code == 1, out
    assert "audit trail broken: approval " in out and " seq 1: expected sealed by a checkpoint" in out, out
    assert "not sealed, dated " in out and "and no checkpoint since: checkpoints deleted" in out, out


async def test_a_rewritten_row_fails_verify_and_the_exports_verifier(tmp_path: Path) -> None:
    gw, raw = _gateway(tmp_path)
    gw.start()
    rejected, approved = await _decided(gw)
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{gw.url}/v1/audit/checkpoint", headers=OPERATOR) as resp:
            assert resp.status == 200
        await raw.run("UPDATE approvals SET status = 'approved' WHERE id = $1", rejected)
        async with http.get(f"{gw.url}/v1/audit/export", headers=OPERATOR) as resp:
            assert resp.status == 200
            (tmp_path / "export.jsonl").write_bytes(await resp.read())
    assert gw.terminate() == 0
    code, public = await run_cli(gw.config, "audit", "public-key")
    assert code == 0
    code, out = await run_cli(
        tmp_path / "none.toml",
        "audit",
        "verify",
        "--file",
        str(tmp_path / "export.jsonl"),
        "--public-key",
        public.strip(),
    )
    assert code == 1 and f"approval {rejected}: expected status rejected (as its events say), found approved" in out
    code, out = await run_cli(gw.config, "audit", "verify")
    assert code == 1 and f"approval {rejected}: expected status rejected (as its events say), found approved" in out
    await raw.run("UPDATE approvals SET status = 'rejected' WHERE id = $1", rejected)
    await raw.run(
        "UPDATE approvals SET decision = replace(decision, 'operator:test', 'operator:mallory') WHERE id = $1", approved
    )
    code, out = await run_cli(gw.config, "audit", "verify")
    assert code == 1 and f"approval {approved}: expected decided_by operator:test (as its events say)" in out, out
    assert "found operator:mallory in its approvals row" in out


async def test_a_gateway_killed_then_started_a_week_later_shows_no_break(tmp_path: Path) -> None:
    """Killed before its timer sealed (checkpoint_every 1h): while it is stopped, verify says
    what it cannot tell apart; started again, it seals before it serves, and verify passes."""
    gw, raw = _gateway(tmp_path, every="1h")
    gw.start()
    await _decided(gw)
    gw.kill9()
    assert await raw.run("SELECT COUNT(*) FROM audit_checkpoints") == [(0,)]  # nothing moved at its start
    await raw.drop_triggers()  # to simulate the week, not to tamper
    await _age(raw, WEEK)
    code, out = await run_cli(gw.config, "audit", "verify")
    assert code == 1 and "no gateway has run since (one seals when it starts)" in out, out
    gw.start()  # healthy: /healthz answers only once the runtime has started
    try:
        code, out = await run_cli(gw.config, "audit", "verify")  # what it writes after start may be unsealed
        assert code == 0 and "audit trail intact" in out, out
    finally:
        gw.stop()


async def test_a_gateway_stopped_on_purpose_leaves_nothing_unsealed(tmp_path: Path) -> None:
    gw, _ = _gateway(tmp_path, every="1h")
    gw.start()
    await _decided(gw)
    assert gw.terminate() == 0
    code, out = await run_cli(gw.config, "audit", "verify")
    assert code == 0 and "audit trail intact" in out and "not sealed" not in out, out


async def test_without_a_key_the_same_attack_is_not_yet_proven(tmp_path: Path) -> None:
    """Unsigned checkpoints are no proof (anyone can recompute them): no rule on the present."""
    gw, raw = _gateway(tmp_path, key=False)
    gw.start()
    rejected, _ = await _decided(gw)
    assert gw.terminate() == 0
    await raw.drop_triggers()
    await _flip(raw, rejected)
    await _age(raw, MINUTES)
    code, out = await run_cli(gw.config, "audit", "verify")
    assert code == 0 and "not yet proven" in out, out
