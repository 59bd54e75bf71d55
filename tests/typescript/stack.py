"""One real `hitl-gateway serve` whose worker is a TypeScript example (`node EXAMPLE resume`),
the fake payment API (one charge per Idempotency-Key), and operator decisions over HTTP."""

from __future__ import annotations

import asyncio
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from examples.invoice_agent.payments import PaymentsAPI
from gateway.testing import TEST_API_KEY
from tests.procs import AUTH, OPERATOR, Gateway, free_port, write_config
from tests.typescript.node import SDK

EXAMPLE = SDK / "examples" / "invoice.mjs"
COMMON = SDK / "examples" / "common.mjs"  # what the examples import: copied beside any one of them
KILL = SDK / "test" / "fixtures" / "kill-between.mjs"


@dataclass
class TsStack:
    tmp: Path
    payments: PaymentsAPI
    payments_url: str
    http: aiohttp.ClientSession
    example: Path = EXAMPLE
    worker: str = "invoice-ts"
    worker_env: dict[str, str] = field(default_factory=dict)
    gw: Gateway | None = None

    @property
    def effects(self) -> Path:
        return self.tmp / "effects.log"

    def serve(self, *, kill_step: str | None = None) -> TsStack:
        command = [shutil.which("node") or "node"]
        env = {"HITL_API_KEY": TEST_API_KEY, **self.worker_env}
        if kill_step:
            (self.tmp / "kills").mkdir()
            command += ["--import", str(KILL)]
            env |= {"KILL_MARKS": str(self.tmp / "kills"), "KILL_STEP": kill_step}
        command += [str(self.example), "resume", "--payments", self.payments_url, "--effects", str(self.effects)]
        extra = f'[workers.{self.worker}]\ncommand = {json.dumps(command)}\ntimeout = "60s"\n'
        extra += 'max_attempts = 4\nretry_base = "200ms"\n'
        port = free_port()
        config = write_config(self.tmp / "gw.toml", f"sqlite:///{self.tmp / 'gw.db'}", port, extra)
        self.gw = Gateway(config, port, self.tmp / "gw.log", env=env).start()
        return self

    async def start(self, run_id: str, *extra: str) -> str:
        """`node EXAMPLE start --run-id RUN_ID ... EXTRA`: it must suspend and exit 0."""
        assert self.gw is not None
        proc = await asyncio.create_subprocess_exec(
            shutil.which("node") or "node",
            str(self.example),
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
            *extra,
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
        [item] = await self.approvals(run_id)
        return item

    async def approvals(self, run_id: str) -> list[dict[str, Any]]:
        """The run's approvals, oldest first."""
        items = (await self.call("GET", f"/v1/approvals?run_id={run_id}"))["items"]
        views = [await self.call("GET", f"/v1/approvals/{a['id']}") for a in items]
        return sorted(views, key=lambda v: (v["created_at"], v["step"]))

    async def decide(self, approval_id: str, outcome: str, **body: Any) -> None:
        await self.call("POST", f"/v1/approvals/{approval_id}/decision", {"outcome": outcome, **body}, OPERATOR)

    async def job(self, approval_id: str, within: float = 60) -> dict[str, Any]:
        """The approval's resume job once it succeeded (fails fast if it failed instead)."""
        async with asyncio.timeout(within):
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
