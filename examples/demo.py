"""`make demo`: the gateway, the fake payment API and the invoice agent, in one command.

It shows each stage as it happens (suspended, card posted, waiting for you at a URL, decided,
resumed, charged once) and then leaves the gateway running so that you can press Approve or
Reject in the web inbox yourself; Ctrl-C stops everything. Its files live in ./var/demo (`--dir`).

    python -m examples.demo [--port PORT] [--approve] [--exit] [--dir DIR]

The gateway listens where `make run` would: `--dev` reads no config file, so that is the
`[server]` address of the variables `$HITL_SERVER_HOST`, `$HITL_SERVER_PORT` and
`$HITL_SERVER_PUBLIC_URL` (default 127.0.0.1:8080), read by the gateway's own settings loader;
`--port` wins over the port. The fake payment API listens at `$HITL_PAYMENTS_URL` (default
http://127.0.0.1:8099, examples/addresses.py), where the agent and its worker charge. Nothing
else of your configuration reaches the demo's gateway: it runs `--dev`, on its own database.

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
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import aiohttp

from examples.addresses import PAYMENTS_URL_VAR, payments_url
from gateway.config import load_settings
from gateway.core.errors import ConfigError
from gateway.settings.server import own_url

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


def address(port: int | None, env: Mapping[str, str]) -> tuple[str, int, str]:
    """(host, port, public_url) of the demo's gateway: the `[server]` settings `--dev serve` reads
    from `env` (no config file, as `make run`), with `port` (`--port`) over theirs when given."""
    env = {k: v for k, v in env.items() if k != "HITL_CONFIG"}  # a copy: no ./hitl-gateway.toml either
    try:
        server = load_settings(None, env, validate=False).server
    except ConfigError as exc:
        raise SystemExit(f"demo: {exc}") from None
    if port is None or port == server.port:
        return server.host, server.port, server.public_url
    derived = server.public_url == own_url(server.host, server.port)  # no public_url configured
    return server.host, port, own_url(server.host, port) if derived else server.public_url


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


async def _ready(http: aiohttp.ClientSession, url: str, proc: asyncio.subprocess.Process, log: Path, hint: str) -> None:
    for _ in range(300):
        if proc.returncode is not None:
            raise SystemExit(f"demo: {log.name} stopped (exit {proc.returncode}); see {log}. {hint}")
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


async def demo(port: int | None, approve: bool, stop_when_done: bool, work: Path) -> int:
    python, payments = sys.executable, payments_url()
    host, port, public = address(port, os.environ)
    gw = own_url(host, port)  # where the demo itself reaches the gateway; links show `public`
    worker = ["{python}", "-m", "examples.invoice_agent.agent", "resume"]  # charges at $HITL_PAYMENTS_URL
    base = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")} | {"PYTHONPATH": str(ROOT)}
    # the gateway, its sign-in link, the agent and the worker (the gateway's environment): one address each
    base |= {"HITL_SERVER_HOST": host, "HITL_SERVER_PORT": str(port), "HITL_SERVER_PUBLIC_URL": public}
    base[PAYMENTS_URL_VAR] = payments
    env = base | {"HITL_WORKERS_INVOICE_COMMAND": json.dumps(worker)}
    run_id = f"demo-{os.getpid()}"
    gateway_cmd = (python, "-m", "gateway", "--dev", "serve")
    payments_cmd = (python, "-m", "examples.invoice_agent.payments")
    async with (
        aiohttp.ClientSession() as http,
        _process(*gateway_cmd, cwd=work, env=env, log=work / "gateway.log") as gateway,
        _process(*payments_cmd, cwd=work, env=base, log=work / "payments.log") as fake_payments,
    ):
        hint = f"Is {host}:{port} taken (`make run`)? Move it: HITL_SERVER_PORT=PORT make demo"
        await _ready(http, f"{gw}/healthz", gateway, work / "gateway.log", hint)
        hint = f"Is {payments} taken? Move it: {PAYMENTS_URL_VAR}=http://127.0.0.1:PORT make demo"
        await _ready(http, f"{payments}/charges", fake_payments, work / "payments.log", hint)
        say(f"gateway at {public} (log: {work / 'gateway.log'}), fake payment API at {payments}")
        keys = json.loads((work / "var" / "dev-secrets.json").read_text())
        agent = ("-m", "examples.invoice_agent.agent", "start", "--run-id", run_id, "--gateway", gw)
        code, out = await _run(python, *agent, "--api-key", keys["api_key"], cwd=work, env=base)
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
        say(f"then press Approve or Reject at {public}/approvals/{approval_id}")
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
    p.add_argument("--port", type=int, help="default: the gateway's configured port ($HITL_SERVER_PORT)")
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
