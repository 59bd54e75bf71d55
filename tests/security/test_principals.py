"""Every key is a principal: an agent sees and writes only its own approvals, runs and journals.

The findings "any API key can take any approval's resume token" (replaying a suspend read from
the list), "any key can write any run", and "run ids and idempotency keys are global" (another
agent's key was a 409 that revealed it, and a predictable key or run id taken first made the
owner's suspends fail), against a real gateway. Run ids and keys are per agent.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from gateway.core.principals import derived_name
from tests.procs import Gateway
from tests.security.conftest import ALICE, BILLING, LEGACY, LEGACY_KEY, MAIL, call, db_counts, suspend_body

pytestmark = pytest.mark.subprocess  # every test here starts a process

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
        # the attack: read run_id/step/args (and the key) and replay the suspend with another key:
        # that is the other agent's own run id and key, so it makes that agent's own approval
        for headers in (MAIL, LEGACY):
            for body in (
                suspend_body("own-run", idempotency_key="k-replay"),  # billing's key: was a 409, an oracle
                suspend_body("replay-1"),  # billing's run id: was a 404
            ):
                status, reply = await call(http, "POST", f"{gateway.url}/v1/suspend", json=body, headers=headers)
                assert status in (200, 201) and reply["status"] == "waiting_approval", reply
                assert first["resume_token"] not in str(reply) and first["id"] not in str(reply)
        status, mine = await call(http, "GET", f"{gateway.url}/v1/approvals/{first['id']}", headers=BILLING)
        assert status == 200 and mine["agent"] == "agent:billing" and mine["status"] == "waiting_approval"


async def test_no_oracle_and_no_squatting_on_another_agents_key_or_run_id(gateway: Gateway) -> None:
    """Mail suspends first with billing's predictable run id and key: it learns nothing (the
    same answer as for a key nobody used), and billing's own suspend, journal and replay work."""
    run_id, key = "squat-1", "billing:invoice-7"
    async with aiohttp.ClientSession() as http:
        fresh = await _suspend(http, gateway, MAIL, run_id="squat-fresh", idempotency_key="nobody-used-this")
        squat = await _suspend(http, gateway, MAIL, run_id=run_id, idempotency_key=key)
        assert set(squat) == set(fresh) and squat["status"] == fresh["status"] == "waiting_approval"
        assert (await call(http, "PUT", f"{gateway.url}/v1/runs/{run_id}/steps/charge", json=STEP, headers=MAIL))[
            0
        ] == 200
        # billing comes second: its suspend works and is its own approval, not mail's
        mine = await _suspend(http, gateway, BILLING, run_id=run_id, idempotency_key=key)
        assert mine["id"] != squat["id"] and mine["resume_token"] != squat["resume_token"]
        _, view = await call(http, "GET", f"{gateway.url}/v1/approvals/{mine['id']}", headers=BILLING)
        assert view["agent"] == "agent:billing" and view["run_id"] == run_id and view["idempotency_key"] == key
        # its replay is its own, and its journal of that run id is its own (empty)
        status, again = await call(
            http, "POST", f"{gateway.url}/v1/suspend", json=suspend_body(run_id, idempotency_key=key), headers=BILLING
        )
        assert status == 200 and again == mine
        _, steps = await call(http, "GET", f"{gateway.url}/v1/runs/{run_id}/steps", headers=BILLING)
        assert steps["items"] == []
        # and mine never reaches mail's
        assert (await call(http, "GET", f"{gateway.url}/v1/approvals/{squat['id']}", headers=BILLING))[0] == 404
        _, listed = await call(http, "GET", f"{gateway.url}/v1/approvals?run_id={run_id}", headers=BILLING)
        assert [a["id"] for a in listed["items"]] == [mine["id"]]


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
        _, one = await call(http, "GET", f"{gateway.url}/v1/approvals?limit=1000&agent=mail", headers=ALICE)
        assert theirs["id"] in {a["id"] for a in one["items"]} and {a["agent"] for a in one["items"]} == {"agent:mail"}
        status, body = await call(http, "GET", f"{gateway.url}/v1/approvals?agent=mail", headers=BILLING)
        assert status == 403 and body["error"]["code"] == "forbidden", body  # an agent lists its own only
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
        assert (await call(http, "PUT", f"{url}/charge", json=STEP, headers=BILLING))[0] == 200
        before = db_counts(gateway, "journal", "approvals")
        for headers in (MAIL, LEGACY):  # another agent, and a key of the older api_keys list
            # the same run id is its own run: empty, and what it writes stays there
            status, steps = await call(http, "GET", url, headers=headers)
            assert status == 200 and steps["items"] == [], steps
            forged = {**STEP, "output": {"charged": False}}
            assert (await call(http, "PUT", f"{url}/charge", json=forged, headers=headers))[0] == 200
            # naming billing's runs is refused, whether or not billing has the run
            for run in ("journal-1", "journal-none"):
                status, body = await call(
                    http, "GET", f"{gateway.url}/v1/runs/{run}/steps?agent=billing", headers=headers
                )
                assert status == 403 and body["error"]["code"] == "forbidden", body
        after = db_counts(gateway, "journal", "approvals")
        assert after == {**before, "journal": before["journal"] + 2}
        _, steps = await call(http, "GET", url, headers=BILLING)
        assert [(s["name"], s["output"]) for s in steps["items"]] == [("charge", {"charged": True})]
        # an operator names the agent; without it, a run id used by several is a 409 naming `agent`
        status, body = await call(http, "GET", url, headers=ALICE)
        assert status == 409 and body["error"]["code"] == "ambiguous_run", body
        assert body["error"]["details"]["field"] == "agent" and "agent:billing" in body["error"]["details"]["agents"]
        for name, charged in (("billing", True), ("agent:mail", False)):
            _, seen = await call(http, "GET", f"{url}?agent={name}", headers=ALICE)
            assert [s["output"]["charged"] for s in seen["items"]] == [charged]
        status, body = await call(http, "GET", f"{url}?agent=no%20such", headers=ALICE)
        assert status == 400 and body["error"]["details"]["field"] == "agent", body
        # a run id only one agent uses needs no name; no agent's runs are `?agent=` (empty)
        assert (await call(http, "PUT", f"{gateway.url}/v1/runs/journal-2/steps/a", json=STEP, headers=MAIL))[0] == 200
        _, seen = await call(http, "GET", f"{gateway.url}/v1/runs/journal-2/steps", headers=ALICE)
        assert [s["name"] for s in seen["items"]] == ["a"]
        ops = f"{gateway.url}/v1/runs/journal-2/steps"
        assert (await call(http, "PUT", f"{ops}/b?agent=", json=STEP, headers=ALICE))[0] == 200
        _, seen = await call(http, "GET", f"{ops}?agent=", headers=ALICE)
        assert [s["name"] for s in seen["items"]] == ["b"]
        _, seen = await call(http, "GET", ops, headers=MAIL)
        assert [s["name"] for s in seen["items"]] == ["a"]


async def test_a_resume_token_opens_its_own_run_only(gateway: Gateway) -> None:
    async with aiohttp.ClientSession() as http:
        mine = await _suspend(http, gateway, BILLING, run_id="token-1")
        await _suspend(http, gateway, MAIL, run_id="token-2")
        token = {"X-HITL-Resume-Token": mine["resume_token"]}
        assert (await call(http, "GET", f"{gateway.url}/v1/runs/token-1/steps", headers=token))[0] == 200
        assert (await call(http, "GET", f"{gateway.url}/v1/runs/token-2/steps", headers=token))[0] == 401
        status, _ = await call(http, "PUT", f"{gateway.url}/v1/runs/token-2/steps/x", json=STEP, headers=token)
        assert status == 401
        # mail uses the same run id too: the token opens its approval's agent's run, billing's
        await _suspend(http, gateway, MAIL, run_id="token-1")
        run = f"{gateway.url}/v1/runs/token-1/steps"
        assert (await call(http, "PUT", f"{run}/theirs", json=STEP, headers=MAIL))[0] == 200
        assert (await call(http, "PUT", f"{run}/resumed", json=STEP, headers=token))[0] == 200
        _, steps = await call(http, "GET", run, headers=BILLING)
        assert [s["name"] for s in steps["items"]] == ["resumed"]
        _, steps = await call(http, "GET", f"{run}?agent=mail", headers=token)  # the token decides, not ?agent
        assert [s["name"] for s in steps["items"]] == ["resumed"]


async def test_legacy_api_keys_are_principals_named_by_a_hash(gateway: Gateway) -> None:
    async with aiohttp.ClientSession() as http:
        created = await _suspend(http, gateway, LEGACY, run_id="legacy-1")
        _, view = await call(http, "GET", f"{gateway.url}/v1/approvals/{created['id']}", headers=LEGACY)
        assert view["agent"] == f"agent:{derived_name(LEGACY_KEY)}" and LEGACY_KEY not in str(view)
        assert (await call(http, "GET", f"{gateway.url}/v1/approvals/{created['id']}", headers=BILLING))[0] == 404
