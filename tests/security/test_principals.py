"""Every key is a principal: an agent sees and writes only its own approvals, runs and journals.

Issue 13's findings "any API key can take any approval's resume token" (replaying a suspend read
from the list) and "any key can write any run", against a real gateway.
"""

from __future__ import annotations

from typing import Any

import aiohttp

from gateway.core.principals import derived_name
from tests.procs import Gateway
from tests.security.conftest import ALICE, BILLING, LEGACY, LEGACY_KEY, MAIL, call, db_counts, suspend_body

STEP = {
    "status": "succeeded",
    "output": {"charged": True},
    "started_at": "2030-01-01T00:00:00Z",
    "finished_at": "2030-01-01T00:00:01Z",
}


async def _suspend(http: aiohttp.ClientSession, gw: Gateway, headers: dict[str, str], **over: Any) -> dict[str, Any]:
    status, body = await call(http, "POST", f"{gw.url}/v1/suspend", json=suspend_body(**over), headers=headers)
    assert status == 201, body
    return dict(body)


async def test_a_replay_by_another_agent_never_gets_the_body_or_the_token(gateway: Gateway) -> None:
    async with aiohttp.ClientSession() as http:
        first = await _suspend(http, gateway, BILLING, run_id="replay-1", idempotency_key="k-replay")
        # the owner's own replay: the same body (and token), no second approval
        status, again = await call(
            http,
            "POST",
            f"{gateway.url}/v1/suspend",
            json=suspend_body("replay-1", idempotency_key="k-replay"),
            headers=BILLING,
        )
        assert status == 200 and again == first
        before = db_counts(gateway)
        # the attack: read run_id/step/args and replay the suspend with another key
        for i, headers in enumerate((MAIL, LEGACY)):
            status, body = await call(
                http, "POST", f"{gateway.url}/v1/suspend", json=suspend_body("replay-1"), headers=headers
            )
            assert status == 404 and body["error"]["code"] == "not_found", body  # the run is billing's
            assert first["resume_token"] not in str(body) and first["id"] not in str(body)
            # the same idempotency key from another run: a 409, never the first approval's body
            status, body = await call(
                http,
                "POST",
                f"{gateway.url}/v1/suspend",
                json=suspend_body(f"other-{i}", idempotency_key="k-replay"),
                headers=headers,
            )
            assert status == 409 and body["error"]["code"] == "idempotency_conflict", body
            assert first["resume_token"] not in str(body) and first["id"] not in str(body)
        after = db_counts(gateway)
        assert {k: after[k] - before[k] for k in after} == {**dict.fromkeys(after, 0), "runs": 2}  # the runs claimed


async def test_an_agent_reads_only_its_own_approvals_events_and_jobs(gateway: Gateway) -> None:
    async with aiohttp.ClientSession() as http:
        mine = await _suspend(http, gateway, BILLING, run_id="read-1", worker="agent")
        theirs = await _suspend(http, gateway, MAIL, run_id="read-2", worker="agent")
        for path in ("", "/events"):
            assert (await call(http, "GET", f"{gateway.url}/v1/approvals/{theirs['id']}{path}", headers=BILLING))[
                0
            ] == 404
            status, body = await call(http, "GET", f"{gateway.url}/v1/approvals/{mine['id']}{path}", headers=BILLING)
            assert status == 200, body
        _, listed = await call(http, "GET", f"{gateway.url}/v1/approvals?limit=1000", headers=BILLING)
        ids = {a["id"] for a in listed["items"]}
        assert mine["id"] in ids and theirs["id"] not in ids
        assert {a["agent"] for a in listed["items"]} == {"agent:billing"}
        _, by_run = await call(http, "GET", f"{gateway.url}/v1/approvals?run_id=read-2", headers=BILLING)
        assert by_run["items"] == []
        _, events = await call(http, "GET", f"{gateway.url}/v1/approvals/{mine['id']}/events", headers=BILLING)
        assert events["items"][0]["kind"] == "suspended" and events["items"][0]["actor"] == "agent:billing"
        # operators see everything; the approval names the agent that created it
        _, view = await call(http, "GET", f"{gateway.url}/v1/approvals/{theirs['id']}", headers=ALICE)
        assert view["agent"] == "agent:mail"
        _, every = await call(http, "GET", f"{gateway.url}/v1/approvals?limit=1000", headers=ALICE)
        assert {mine["id"], theirs["id"]} <= {a["id"] for a in every["items"]}
        # jobs: decided by the operator, then listed per agent
        for a in (mine, theirs):
            status, _ = await call(
                http,
                "POST",
                f"{gateway.url}/v1/approvals/{a['id']}/decision",
                json={"outcome": "reject"},
                headers=ALICE,
            )
            assert status == 200
        _, jobs = await call(http, "GET", f"{gateway.url}/v1/jobs?limit=1000", headers=BILLING)
        assert {j["approval_id"] for j in jobs["items"]} & {mine["id"], theirs["id"]} == {mine["id"]}


async def test_an_agent_writes_and_reads_only_its_own_runs(gateway: Gateway) -> None:
    async with aiohttp.ClientSession() as http:
        url = f"{gateway.url}/v1/runs/journal-1/steps"
        assert (await call(http, "PUT", f"{url}/charge", json=STEP, headers=BILLING))[0] == 200  # claims the run
        before = db_counts(gateway, "journal", "runs", "approvals")
        for headers in (MAIL, LEGACY):  # another agent, and a key of the older api_keys list
            assert (await call(http, "GET", url, headers=headers))[0] == 404
            forged = {**STEP, "output": {"charged": False}}
            assert (await call(http, "PUT", f"{url}/charge", json=forged, headers=headers))[0] == 404
            assert (await call(http, "PUT", f"{url}/refund", json=STEP, headers=headers))[0] == 404
            # two agents with the same run id: the second cannot suspend into the first one's run
            status, body = await call(
                http, "POST", f"{gateway.url}/v1/suspend", json=suspend_body("journal-1"), headers=headers
            )
            assert status == 404, body
        assert db_counts(gateway, "journal", "runs", "approvals") == before
        _, steps = await call(http, "GET", url, headers=BILLING)
        assert [(s["name"], s["output"]) for s in steps["items"]] == [("charge", {"charged": True})]
        _, seen = await call(http, "GET", url, headers=ALICE)  # an operator reads every run
        assert [s["name"] for s in seen["items"]] == ["charge"]
        # a new run id is free for anyone, and an empty unknown run reads as empty
        assert (await call(http, "GET", f"{gateway.url}/v1/runs/journal-2/steps", headers=MAIL))[1]["items"] == []
        assert (await call(http, "PUT", f"{gateway.url}/v1/runs/journal-2/steps/a", json=STEP, headers=MAIL))[0] == 200


async def test_a_resume_token_opens_its_own_run_only(gateway: Gateway) -> None:
    async with aiohttp.ClientSession() as http:
        mine = await _suspend(http, gateway, BILLING, run_id="token-1")
        await _suspend(http, gateway, MAIL, run_id="token-2")
        token = {"X-HITL-Resume-Token": mine["resume_token"]}
        assert (await call(http, "GET", f"{gateway.url}/v1/runs/token-1/steps", headers=token))[0] == 200
        assert (await call(http, "GET", f"{gateway.url}/v1/runs/token-2/steps", headers=token))[0] == 401
        status, _ = await call(http, "PUT", f"{gateway.url}/v1/runs/token-2/steps/x", json=STEP, headers=token)
        assert status == 401


async def test_legacy_api_keys_are_principals_named_by_a_hash(gateway: Gateway) -> None:
    async with aiohttp.ClientSession() as http:
        created = await _suspend(http, gateway, LEGACY, run_id="legacy-1")
        _, view = await call(http, "GET", f"{gateway.url}/v1/approvals/{created['id']}", headers=LEGACY)
        assert view["agent"] == f"agent:{derived_name(LEGACY_KEY)}" and LEGACY_KEY not in str(view)
        assert (await call(http, "GET", f"{gateway.url}/v1/approvals/{created['id']}", headers=BILLING))[0] == 404
