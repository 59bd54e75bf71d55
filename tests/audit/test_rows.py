"""The approvals row against its chained events (both backends): a row rewritten to another
status, decider or args hash is a break naming the approval and the field, in the database and
in an export; every way a gateway decides leaves rows that agree."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from gateway.config import Settings
from gateway.core.audit import load_public_key
from gateway.core.models import Outcome
from gateway.runtime import Runtime
from gateway.service.approvals import SuspendRequest
from gateway.service.audit import verify_lines
from gateway.service.commands import Authority
from gateway.testing import FakeClock
from tests.audit.conftest import SIGNING_KEY, Raw, decided

pytestmark = pytest.mark.subprocess  # every test here starts a process


@pytest.fixture
def settings(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory(
        workers={"agent": {"command": ["true"]}},
        audit={"signing_key": SIGNING_KEY},
        policies={"lapse": {"timeout": "1m", "on_timeout": "approve"}},  # an operator's: approves on timeout
    )


async def _suspend(rt: Runtime, run: str, **over: Any) -> str:
    req = SuspendRequest(run_id=run, step="pay", title=f"Pay {run}", args={"amount": 5}, worker="agent", **over)
    approval, _ = await rt.service.suspend(req)
    return approval.id


async def _every_ending(rt: Runtime, clock: FakeClock) -> dict[str, str]:
    """One approval per way a decision is stored, sealed: approved, approved on edited args,
    rejected, cancelled, timed out (policy approve), still waiting."""
    ids = {name: await _suspend(rt, name) for name in ("approved", "rejected", "cancelled", "waiting")}
    ids["edited"] = await _suspend(rt, "edited", editable=True)
    ids["timed_out"] = await _suspend(rt, "timed_out", policy="lapse")
    await rt.service.decide(ids["approved"], Outcome.APPROVE, "operator:alice", authority=Authority.OPERATOR)
    await rt.service.decide(
        ids["rejected"], Outcome.REJECT, "operator:alice", authority=Authority.OPERATOR, comment="no"
    )
    await rt.service.decide(
        ids["edited"], Outcome.APPROVE, "operator:alice", authority=Authority.OPERATOR, args={"amount": 4}
    )
    await rt.service.cancel(ids["cancelled"], "operator:alice", "not needed")
    clock.advance(120)
    await rt.scheduler.tick()
    await rt.worker.drain()
    await rt.audit.seal()
    return ids


async def test_every_ending_leaves_rows_that_agree(runtime: Runtime, clock: FakeClock) -> None:
    ids = await _every_ending(runtime, clock)
    approval = await runtime.store.get_approval(ids["edited"])
    assert approval is not None and approval.run_hash != approval.args_hash  # approved on edited args
    verdict = await runtime.audit.verify()
    assert verdict.ok, verdict.problem
    assert "6 approvals rows checked against their events" in verdict.summary


REWRITES = [
    ("rejected", "UPDATE approvals SET status = 'approved' WHERE id = $1", "status"),
    (
        "rejected",
        "UPDATE approvals SET status = 'approved', decision = replace(decision, '\"reject\"', '\"approve\"')"
        " WHERE id = $1",
        "status",
    ),
    (
        "approved",
        "UPDATE approvals SET decision = replace(decision, 'operator:alice', 'operator:mallory') WHERE id = $1",
        "decided_by",
    ),
    (
        "timed_out",
        "UPDATE approvals SET decision = replace(decision, '\"approve\"', '\"reject\"') WHERE id = $1",
        "decision.outcome",
    ),
    ("waiting", "UPDATE approvals SET args_hash = $2 WHERE id = $1", "args_hash"),
    ("edited", "UPDATE approvals SET proposal = replace(proposal, $3, $2) WHERE id = $1", "approved args_hash"),
]


@pytest.mark.parametrize(("which", "sql", "field"), REWRITES, ids=[f"{w}-{f}" for w, _, f in REWRITES])
async def test_a_rewritten_row_is_a_break_naming_the_field(
    runtime: Runtime, clock: FakeClock, raw: Raw, which: str, sql: str, field: str
) -> None:
    """No trigger to drop: the approvals table is current state. The events say what it holds."""
    ids = await _every_ending(runtime, clock)
    victim = ids[which]
    approval = await runtime.store.get_approval(victim)
    assert approval is not None
    forged = "f" * 64
    args = [victim]
    if "$3" in sql:
        args += [forged, approval.run_hash]
    elif "$2" in sql:
        args.append(forged)
    await raw.run(sql, *args)
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and problem.approval_id == victim, problem
    assert problem.expected.startswith(f"{field} ") and problem.found.endswith("in its approvals row"), problem
    assert str(problem).startswith(f"approval {victim}: expected {field} ")


async def test_a_row_with_values_no_gateway_writes_is_named(runtime: Runtime, clock: FakeClock, raw: Raw) -> None:
    (victim,) = await decided(runtime, 1, clock)
    await raw.run("UPDATE approvals SET decision = '[1, 2]' WHERE id = $1", victim)
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and problem.approval_id == victim
    assert problem.expected == "an approvals row of the types the gateway writes"


async def test_a_deleted_row_is_a_break(runtime: Runtime, clock: FakeClock, raw: Raw) -> None:
    (victim,) = await decided(runtime, 1, clock)
    await runtime.audit.seal()
    for table in ("resume_jobs", "outbox"):
        await raw.run(f"DELETE FROM {table} WHERE approval_id = $1", victim)
    await raw.run("DELETE FROM approvals WHERE id = $1", victim)
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and problem.approval_id == victim
    assert problem.expected.startswith("approvals row") and problem.found == "none in its approvals row"


async def test_the_export_carries_each_row_and_its_verifier_checks_it(
    runtime: Runtime, clock: FakeClock, raw: Raw
) -> None:
    ids = await _every_ending(runtime, clock)
    key = runtime.audit.public_key
    assert key is not None
    lines = [line async for line in runtime.audit.export()]
    rows = [json.loads(x) for x in lines if json.loads(x)["type"] == "approval"]
    assert sorted(r["id"] for r in rows) == sorted(ids.values())
    assert {r["id"]: r["status"] for r in rows}[ids["rejected"]] == "rejected"
    assert verify_lines(lines, load_public_key(key)).ok
    await raw.run("UPDATE approvals SET status = 'approved' WHERE id = $1", ids["rejected"])
    lines = [line async for line in runtime.audit.export()]
    problem = verify_lines(lines, load_public_key(key)).problem
    assert problem is not None and problem.approval_id == ids["rejected"]
    assert (
        problem.expected == "status rejected (as its events say)" and problem.found == "approved in its approvals row"
    )
    older = [x for x in lines if json.loads(x)["type"] != "approval"]  # an export without row lines
    assert verify_lines(older, load_public_key(key)).ok
