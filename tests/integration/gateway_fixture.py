"""A real gateway on a real port (so that worker subprocesses can call it) and the fake payment API."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from examples.invoice_agent.agent import Effects, invoice_run
from examples.invoice_agent.payments import PaymentsAPI
from gateway.http.app import create_app
from gateway.http.keys import RUNTIME
from gateway.runtime import Runtime
from gateway.sdk import DurableRun, Suspended
from gateway.testing import TEST_API_KEY, FakeClock
from tests.procs import free_port

FAKES = Path(__file__).parents[1] / "fakes"


@dataclass
class Env:
    rt: Runtime
    url: str
    payments: PaymentsAPI
    payments_url: str
    effects: Path


def agent_command(payments_url: str, effects: Path, chaos: tuple[Path, int, float] | None = None) -> list[str]:
    args = ["-m", "examples.invoice_agent.agent", "resume", "--payments", payments_url, "--effects", str(effects)]
    if chaos is None:
        return [sys.executable, *args]
    marks, kills, delay = chaos
    return [sys.executable, str(FAKES / "chaos.py"), str(marks), str(kills), str(delay), *args]


async def start_env(
    aiohttp_server: Callable[..., Any],
    settings_factory: Callable[..., Any],
    clock: FakeClock,
    tmp_path: Path,
    chaos: tuple[Path, int, float] | None = None,
) -> Env:
    payments = PaymentsAPI(latency=0.05 if chaos else 0.0)
    pay_server = await aiohttp_server(payments.app())
    payments_url = f"http://127.0.0.1:{pay_server.port}"
    port = free_port()
    effects = tmp_path / "effects.log"
    worker = {"command": agent_command(payments_url, effects, chaos), "timeout": "30s", "max_attempts": 6}
    settings = settings_factory(
        server={"public_url": f"http://127.0.0.1:{port}"}, workers={"invoice": {**worker, "retry_base": "1s"}}
    )
    rt = Runtime(settings, clock=clock, owner="test")
    app = create_app(settings, runtime=rt, background=False)
    await aiohttp_server(app, port=port)
    assert app[RUNTIME] is rt
    return Env(rt, f"http://127.0.0.1:{port}", payments, payments_url, effects)


API_KEY = TEST_API_KEY


async def started_invoice(env: Env, run_id: str) -> str:
    """The example agent's first execution, up to its approval (suspended): the approval id."""
    async with await DurableRun.open(run_id, gateway_url=env.url, api_key=API_KEY) as run:
        with pytest.raises(Suspended) as suspended:
            await invoice_run(run, "ACME", env.payments_url, Effects(str(env.effects)))
    return suspended.value.approval_id
