"""`make demo`: the gateway, the fake payment API and the invoice agent, in one command.

It shows each stage as it happens (suspended, card posted, waiting for you at a URL, decided,
resumed, charged once) and then leaves the gateway running so that you can press Approve or
Reject in the web inbox yourself; Ctrl-C stops everything. Its files live in ./var/demo (`--dir`).

    python -m examples.demo [--port 8080] [--approve] [--exit]

`--approve` decides as the dev operator instead of waiting for you, and `--exit` stops once the
run has finished (the test of this demo uses both).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
STAGES = {  # event kind -> what the demo says
    "suspended": "suspended: the agent saved its checkpoint, got a resume token and exited",
    "card_posted": "card posted to the web inbox",
    "approved": "approved by {actor}",
    "rejected": "rejected by {actor}",
    "timed_out": "timed out (the policy decided)",
    "job_started": "resumed: the gateway's worker rehydrates the run",
    "job_succeeded": "the run finished",
    "job_failed": "the worker failed: {data}",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def say(text: str) -> None:
    print(f"demo: {text}", flush=True)


async def _run(*argv: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode()


@contextlib.asynccontextmanager
async def _process(*argv: str, cwd: Path, env: dict[str, str], log: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    with log.open("ab") as out:
        proc = await asyncio.create_subprocess_exec(*argv, cwd=cwd, env=env, stdout=out, stderr=out)
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 20)
            except TimeoutError:
                proc.kill()


async def _ready(http: aiohttp.ClientSession, url: str, proc: asyncio.subprocess.Process, log: Path) -> None:
    for _ in range(300):
        if proc.returncode is not None:
            raise SystemExit(f"demo: {log.name} stopped (exit {proc.returncode}); see {log}")
        with contextlib.suppress(aiohttp.ClientError):
            async with http.get(url) as resp:
                if resp.status == 200:
                    return
        await asyncio.sleep(0.1)
    raise SystemExit(f"demo: {url} did not answer; see {log}")


async def _stages(http: aiohttp.ClientSession, gw: str, approval_id: str, payments: str, seen: int) -> tuple[int, bool]:
    """Print the stages recorded since event number `seen`; (events seen now, whether the run ended)."""
    async with http.get(f"{gw}/v1/approvals/{approval_id}/events") as resp:
        events = (await resp.json())["items"]
    ended = False
    for e in events[seen:]:
        text = STAGES.get(e["kind"])
        if text:
            say(text.format(actor=e["actor"], data=json.dumps(e["data"])))
        if e["kind"] in ("job_succeeded", "job_failed"):
            ended = True
            async with http.get(f"{payments}/charges") as resp:
                charges = (await resp.json())["charges"]
            say(f"charges at the payment API: {len(charges)} (exactly one if approved, none if not)")
    return len(events), ended


async def demo(port: int, approve: bool, stop_when_done: bool, work: Path) -> int:
    python, payments_port = sys.executable, _free_port()
    gw, payments = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{payments_port}"
    worker = ["{python}", "-m", "examples.invoice_agent.agent", "resume", "--payments", payments]
    base = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")} | {"PYTHONPATH": str(ROOT)}
    base["HITL_SERVER_PORT"] = str(port)  # the gateway, and its sign-in link, on this port
    env = base | {"HITL_WORKERS_INVOICE_COMMAND": json.dumps(worker)}
    run_id = f"demo-{os.getpid()}"
    gateway_cmd = (python, "-m", "gateway", "--dev", "serve")
    payments_cmd = (python, "-m", "examples.invoice_agent.payments", "--port", str(payments_port))
    async with (
        aiohttp.ClientSession() as http,
        _process(*gateway_cmd, cwd=work, env=env, log=work / "gateway.log") as gateway,
        _process(*payments_cmd, cwd=work, env=base, log=work / "payments.log") as fake_payments,
    ):
        await _ready(http, f"{gw}/healthz", gateway, work / "gateway.log")
        await _ready(http, f"{payments}/charges", fake_payments, work / "payments.log")
        say(f"gateway at {gw} (log: {work / 'gateway.log'}), fake payment API at {payments}")
        keys = json.loads((work / "var" / "dev-secrets.json").read_text())
        agent = ("-m", "examples.invoice_agent.agent", "start", "--run-id", run_id, "--gateway", gw)
        code, out = await _run(python, *agent, "--api-key", keys["api_key"], "--payments", payments, cwd=work, env=base)
        if code != 0:
            say(f"the agent failed: {out}")
            return 1
        approval_id = out.strip().split("suspended on approval ", 1)[1].split(";", 1)[0]
        code, link = await _run(python, "-m", "gateway", "--dev", "web", "login-link", "dev", cwd=work, env=base)
        http.headers["Authorization"] = f"Bearer {keys['operator_key']}"  # the operator reads every event
        seen = 0
        while seen < 2:  # suspended, card posted
            seen, _ = await _stages(http, gw, approval_id, payments, seen)
            await asyncio.sleep(0.1)
        say(f"waiting for you: sign in at {link.strip()}")
        say(f"then press Approve or Reject at {gw}/approvals/{approval_id}")
        if approve:
            async with http.post(f"{gw}/v1/approvals/{approval_id}/decision", json={"outcome": "approve"}) as r:
                r.raise_for_status()
        while True:
            seen, ended = await _stages(http, gw, approval_id, payments, seen)
            if ended and stop_when_done:
                return 0
            if ended:
                say("done; the gateway keeps running for more presses: Ctrl-C stops it")
            await asyncio.sleep(0.3)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m examples.demo")
    p.add_argument("--port", type=int, default=int(os.environ.get("DEMO_PORT", "8080")))
    p.add_argument("--approve", action="store_true", help="decide as the dev operator instead of waiting for you")
    p.add_argument("--exit", action="store_true", help="stop once the run has finished")
    p.add_argument("--dir", type=Path, default=ROOT / "var" / "demo", help="where its database and logs go")
    args = p.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    try:
        return asyncio.run(demo(args.port, args.approve, args.exit, args.dir.resolve()))
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
