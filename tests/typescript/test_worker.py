"""The TypeScript worker entry under a real `serve`: the gateway launches `node invoice.mjs
resume` for the decided approval (sdk-ts/examples/invoice.mjs), which rehydrates and runs the
pending step exactly once, even when killed (-9) between the charge and its journal entry."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from examples.invoice_agent.payments import PaymentsAPI
from gateway.testing import TEST_API_KEY
from tests.procs import AUTH, OPERATOR, Gateway, free_port, write_config
from tests.typescript.node import SDK, build

pytestmark = pytest.mark.subprocess
EXAMPLE = SDK / "examples" / "invoice.mjs"
KILL = SDK / "test" / "fixtures" / "kill-between.mjs"


@dataclass
class TsStack:
    tmp: Path
    payments: PaymentsAPI
    payments_url: str
    http: aiohttp.ClientSession
    gw: Gateway | None = None

    @property
    def effects(self) -> Path:
        return self.tmp / "effects.log"

    def serve(self, *, kill_step: str | None = None) -> TsStack:
        command = [shutil.which("node") or "node"]
        env = {"HITL_API_KEY": TEST_API_KEY}
        if kill_step:
            (self.tmp / "kills").mkdir()
            command += ["--import", str(KILL)]
            env |= {"KILL_MARKS": str(self.tmp / "kills"), "KILL_STEP": kill_step}
        command += [str(EXAMPLE), "resume", "--payments", self.payments_url, "--effects", str(self.effects)]
        extra = f'[workers.invoice-ts]\ncommand = {json.dumps(command)}\ntimeout = "60s"\n'
        extra += 'max_attempts = 4\nretry_base = "200ms"\n'
        port = free_port()
        config = write_config(self.tmp / "gw.toml", f"sqlite:///{self.tmp / 'gw.db'}", port, extra)
        self.gw = Gateway(config, port, self.tmp / "gw.log", env=env).start()
        return self

    async def start(self, run_id: str) -> str:
        assert self.gw is not None
        proc = await asyncio.create_subprocess_exec(
            shutil.which("node") or "node",
            str(EXAMPLE),
            "start",
            "--run-id",
            run_id,
            "--gateway",
            self.gw.url,
            "--api-key",
            TEST_API_KEY,
            "--payments",
            self.payments_url,
            "--effects",
            str(self.effects),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out = (await proc.communicate())[0].decode()
        assert proc.returncode == 0, out
        assert "suspended on approval" in out, out
        return out

    async def call(self, method: str, path: str, body: Any = None, headers: dict[str, str] = AUTH) -> Any:
        assert self.gw is not None
        async with self.http.request(method, self.gw.url + path, json=body, headers=headers) as resp:
            assert resp.status < 300, await resp.text()
            return await resp.json()

    async def approval(self, run_id: str) -> dict[str, Any]:
        [item] = (await self.call("GET", f"/v1/approvals?run_id={run_id}"))["items"]
        return dict(await self.call("GET", f"/v1/approvals/{item['id']}"))

    async def decide(self, approval_id: str, outcome: str, **body: Any) -> None:
        await self.call("POST", f"/v1/approvals/{approval_id}/decision", {"outcome": outcome, **body}, OPERATOR)

    async def job(self, approval_id: str) -> dict[str, Any]:
        async with asyncio.timeout(60):
            while True:
                job = (await self.call("GET", f"/v1/approvals/{approval_id}"))["resume_job"]
                if job and job["status"] == "succeeded":
                    return dict(job)
                assert not job or job["status"] != "failed", (job, self.log())
                await asyncio.sleep(0.1)

    async def steps(self, run_id: str) -> dict[str, dict[str, Any]]:
        return {s["name"]: s for s in (await self.call("GET", f"/v1/runs/{run_id}/steps"))["items"]}

    def attempts(self) -> list[str]:
        return self.effects.read_text().splitlines() if self.effects.exists() else []

    def log(self) -> str:
        return (self.tmp / "gw.log").read_text()[-3000:]


@pytest.fixture
async def ts(tmp_path: Path, aiohttp_server: Callable[..., Any]) -> AsyncIterator[TsStack]:
    build()
    payments = PaymentsAPI()
    server = await aiohttp_server(payments.app())
    async with aiohttp.ClientSession() as http:
        stack = TsStack(tmp_path, payments, f"http://127.0.0.1:{server.port}", http)
        try:
            yield stack
        finally:
            if stack.gw is not None:
                stack.gw.stop()


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
