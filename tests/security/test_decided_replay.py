"""A suspend replayed on a decided approval hands its owner a fresh token (a restarted agent
learns the decision even past the first token's life). Attacked as the agent that wants its own
step approved: the fresh token reads its decision and decides nothing, not with token decisions
on either (the step is decided), not as a bearer key; another agent's replay gets no token."""

from __future__ import annotations

import aiohttp
import pytest

from tests.procs import Gateway
from tests.security.conftest import ALICE, BILLING, MAIL, Launch, call, db_counts, suspend_body

pytestmark = pytest.mark.subprocess  # every test here starts a process


async def _decided_then_replayed(http: aiohttp.ClientSession, gateway: Gateway, run_id: str) -> tuple[dict, dict]:
    body = suspend_body(run_id=run_id)
    status, created = await call(http, "POST", f"{gateway.url}/v1/suspend", json=body, headers=BILLING)
    assert status == 201, created
    decision = {"outcome": "reject", "comment": "not this one"}
    status, reply = await call(
        http, "POST", f"{gateway.url}/v1/approvals/{created['id']}/decision", json=decision, headers=ALICE
    )
    assert status == 200, reply
    status, replay = await call(http, "POST", f"{gateway.url}/v1/suspend", json=body, headers=BILLING)
    assert status == 200 and replay["status"] == "rejected" and replay["id"] == created["id"], replay
    assert replay["resume_token"] != created["resume_token"]  # the fresh one
    return created, replay


async def _refused_everywhere(
    http: aiohttp.ClientSession, gateway: Gateway, replay: dict, *, statuses: set[int]
) -> None:
    # (not `events`: the gateway's own loops go on syncing the card meanwhile)
    before = db_counts(gateway, "approvals", "resume_jobs", "journal")
    token, base = replay["resume_token"], f"{gateway.url}/v1/approvals/{replay['id']}"
    for outcome in ("approve", "reject"):
        status, reply = await call(http, "POST", f"{gateway.url}/v1/resume", json={"token": token, "outcome": outcome})
        assert status in statuses, reply
    bearer = {"Authorization": f"Bearer {token}"}
    status, reply = await call(http, "POST", f"{base}/decision", json={"outcome": "approve"}, headers=bearer)
    assert status == 401, reply
    assert db_counts(gateway, "approvals", "resume_jobs", "journal") == before
    status, doc = await call(http, "GET", f"{gateway.url}/v1/resume/{token}")
    assert status == 200 and doc["decision"]["outcome"] == "reject" and doc["status"] == "rejected", doc
    # another agent replaying the same suspend: its own run id and key, its own new approval
    again = suspend_body(run_id=doc["run_id"])
    status, other = await call(http, "POST", f"{gateway.url}/v1/suspend", json=again, headers=MAIL)
    assert status == 201 and other["status"] == "waiting_approval", other
    assert token not in str(other) and replay["id"] not in str(other)


async def test_the_fresh_token_of_a_decided_replay_decides_nothing(gateway: Gateway) -> None:
    async with aiohttp.ClientSession() as http:
        _, replay = await _decided_then_replayed(http, gateway, "replayed-1")
        await _refused_everywhere(http, gateway, replay, statuses={403})  # token decisions are off


async def test_nor_with_token_decisions_on(launch: Launch) -> None:
    gateway = launch(name="tokens", security="token_decisions = true")
    async with aiohttp.ClientSession() as http:
        _, replay = await _decided_then_replayed(http, gateway, "replayed-2")
        await _refused_everywhere(http, gateway, replay, statuses={409})  # already decided
