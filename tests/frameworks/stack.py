"""One real `hitl-gateway serve` with the Telegram fake and the fake payment API, for the
framework examples: start an agent (a subprocess), find its cards, press them like Telegram
does, and watch the worker resume the run.

Decisions are Telegram presses by an allowed approver, never API calls with the agent's key.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from adapters.telegram.parse import parse_ref
from examples.invoice_agent.payments import PaymentsAPI
from gateway.testing import TEST_API_KEY
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.procs import AUTH, Gateway, free_port, write_config
from tests.telegram.conftest import ALICE, CHAT, HEADERS, SECRET, TG, TOKEN

ROOT = Path(__file__).resolve().parents[2]
KILL_BETWEEN = ROOT / "tests" / "fakes" / "kill_between.py"
CHANNEL = f"telegram:{CHAT}"


@dataclass
class Stack:
    """The gateway (`gw`), the fakes, and where the example writes its effects."""

    tmp: Path
    module: str  # examples.<name>.agent
    worker: str
    tg_api: FakeTelegramAPI
    payments: PaymentsAPI
    payments_url: str
    http: aiohttp.ClientSession
    agent_args: list[str] = field(default_factory=list)  # extra args for start and resume
    gw: Gateway | None = None

    @property
    def effects(self) -> Path:
        return self.tmp / "effects.log"

    @property
    def url(self) -> str:
        assert self.gw is not None
        return self.gw.url

    def _args(self) -> list[str]:
        return ["--payments", self.payments_url, "--effects", str(self.effects), *self.agent_args]

    def serve(self, *, kill_between: str | None = None) -> Stack:
        """Start the gateway; with `kill_between`, the worker SIGKILLs itself once per approval
        right after the effect of the step whose name starts with it, before its journal entry."""
        command = [sys.executable, "-m", self.module, "resume", *self._args()]
        if kill_between is not None:
            marks = self.tmp / "kills"
            marks.mkdir(exist_ok=True)
            command = [sys.executable, str(KILL_BETWEEN), str(marks), kill_between, *command[1:]]
        port = free_port()
        extra = (
            f'[telegram]\nbot_token = "{TOKEN}"\nwebhook_secret = "{SECRET}"\nbase_url = "{self.tg_api.base_url}"\n'
            f"approvers = [{ALICE}]\nchats = [{CHAT}]\n\n"
        )
        if self.worker:
            extra += f'[workers.{self.worker}]\ncommand = {json.dumps(command)}\ntimeout = "60s"\n'
            extra += 'max_attempts = 4\nretry_base = "200ms"\n'

        config = write_config(self.tmp / "gw.toml", f"sqlite:///{self.tmp / 'gw.db'}", port, extra)
        # the worker inherits the gateway's environment: the key lets a resumed run pause again
        self.gw = Gateway(config, port, self.tmp / "gw.log", env={"HITL_API_KEY": TEST_API_KEY}).start()
        return self

    async def start(self, run_id: str, invoices: str = "INV-1:4200", *extra: str) -> str:
        """`python -m examples.<name>.agent start ...`: it must suspend and exit 0."""
        code, text = await self.start_process(run_id, invoices, *extra)
        assert code == 0, text
        assert "suspended on" in text, text
        return text

    async def start_process(self, run_id: str, invoices: str, *extra: str) -> tuple[int | None, str]:
        """`python -m <module> start ... <extra>`, whatever becomes of it: its exit code and output."""
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            self.module,
            "start",
            "--run-id",
            run_id,
            "--gateway",
            self.url,
            "--api-key",
            TEST_API_KEY,
            "--channel",
            CHANNEL,
            "--invoices",
            invoices,
            *self._args(),
            *extra,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=ROOT,
        )
        out, _ = await proc.communicate()
        return proc.returncode, out.decode()

    async def get(self, path: str) -> Any:
        async with self.http.get(self.url + path, headers=AUTH) as resp:
            assert resp.status == 200, await resp.text()
            return await resp.json()

    async def approvals(self, run_id: str, count: int) -> list[dict[str, Any]]:
        """The run's approvals, each once its Telegram card is posted (oldest first)."""
        async with asyncio.timeout(20):
            while True:
                items = (await self.get(f"/v1/approvals?run_id={run_id}"))["items"]
                views = [await self.get(f"/v1/approvals/{a['id']}") for a in items]
                if len(views) == count and all(v["cards"] and v["cards"][0]["ref"] for v in views):
                    return sorted(views, key=lambda v: v["created_at"])
                await asyncio.sleep(0.05)

    async def press(self, approval: dict[str, Any], verb: str) -> None:
        """Alice presses Approve or Reject on the approval's card."""
        message_id = parse_ref(approval["cards"][0]["ref"])[1]
        helper = TG(None, None, self.tg_api, None)  # type: ignore[arg-type]
        update = helper.press(ALICE, helper.data(message_id, verb), message_id)
        async with self.http.post(f"{self.url}/webhooks/telegram", data=json.dumps(update), headers=HEADERS) as r:
            assert r.status == 200, await r.text()
            await self.tg_api.apply_webhook_reply(await r.json(), update)  # Telegram runs the answer the 200 carries
            assert not self.tg_api.bad_replies, self.tg_api.bad_replies

    async def job(self, approval_id: str, status: str = "succeeded", within: float = 60) -> dict[str, Any]:
        """The approval's resume job once it reached `status` (fails fast if it failed instead)."""
        async with asyncio.timeout(within):
            while True:
                job = (await self.get(f"/v1/approvals/{approval_id}"))["resume_job"]
                if job and job["status"] == status:
                    return dict(job)
                assert not job or job["status"] != "failed", (job, self.gw_log())
                await asyncio.sleep(0.1)

    async def steps(self, run_id: str) -> dict[str, dict[str, Any]]:
        return {s["name"]: s for s in (await self.get(f"/v1/runs/{run_id}/steps"))["items"]}

    def charges(self) -> dict[str, int]:
        """Charges by invoice, as the payment API counted them (one per idempotency key)."""
        out: dict[str, int] = {}
        for c in self.payments.charges.values():
            out[c["run_id"]] = out.get(c["run_id"], 0) + 1
        return out

    def charge_attempts(self) -> list[str]:
        return self.effects.read_text().splitlines() if self.effects.exists() else []

    def gw_log(self) -> str:
        return (self.tmp / "gw.log").read_text()[-3000:]

    def stop(self) -> None:
        if self.gw is not None:
            self.gw.stop()
