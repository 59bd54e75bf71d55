"""The TypeScript worker entry under a real `serve`: the gateway launches `node invoice.mjs
resume` for the decided approval (sdk-ts/examples/invoice.mjs), which rehydrates and runs the
pending step exactly once, even when killed (-9) between the charge and its journal entry."""

from __future__ import annotations

import pytest

from tests.typescript.stack import TsStack

pytestmark = pytest.mark.subprocess


async def test_approve_runs_the_pending_step_once(ts: TsStack) -> None:
    ts.serve()
    await ts.start("ts-1")
    approval = await ts.approval("ts-1")
    assert approval["args"] == {"customer": "ACME", "amount": 4200, "currency": "EUR"}
    assert ts.attempts() == ["research"]  # nothing charged before the decision
    await ts.decide(approval["id"], "approve")
    job = await ts.job(approval["id"])
    assert job["attempts"] == 1
    assert ts.attempts() == ["research", "charge"]  # research replayed from the journal
    assert [c["amount"] for c in ts.payments.charges.values()] == [4200]
    steps = await ts.steps("ts-1")
    assert steps["approval"]["output"]["outcome"] == "approve"
    assert steps["email"]["output"]["body"] == "Charged 4200 as ch_1"


async def test_an_edit_is_what_runs_and_a_rejection_carries_its_reason(ts: TsStack) -> None:
    ts.serve()
    await ts.start("ts-edit")
    await ts.start("ts-no")
    edited, rejected = await ts.approval("ts-edit"), await ts.approval("ts-no")
    await ts.decide(edited["id"], "approve", args={**edited["args"], "amount": 3000})
    await ts.decide(rejected["id"], "reject", comment="wrong customer")
    await ts.job(edited["id"])
    await ts.job(rejected["id"])
    assert [(c["run_id"], c["amount"]) for c in ts.payments.charges.values()] == [("ts-edit", 3000)]
    assert (await ts.steps("ts-no"))["email"]["output"]["body"] == "Not charged: wrong customer"


async def test_kill_9_between_the_charge_and_its_journal_entry_charges_once(ts: TsStack) -> None:
    ts.serve(kill_step="charge")
    await ts.start("ts-kill")
    approval = await ts.approval("ts-kill")
    await ts.decide(approval["id"], "approve")
    job = await ts.job(approval["id"])
    assert job["attempts"] == 2  # the first attempt was killed right after the charge
    assert ts.attempts() == ["research", "charge", "charge"]  # the retry asked again...
    assert len(ts.payments.charges) == 1 and ts.payments.requests == 2  # ...with the same key: one charge
    assert (await ts.steps("ts-kill"))["charge"]["attempts"] == 1
