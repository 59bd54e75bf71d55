"""What the three framework examples share: the command line, the one side effect (a charge on
the fake payment API, journaled with an idempotency key), and start/resume around a gate.

    python -m examples.<name>.agent start --run-id R --gateway URL --api-key K [--invoices INV-1:4200,INV-2:1500]
        runs the agent until it pauses for approval, suspends (one approval per tool call), exits 0
    python -m examples.<name>.agent resume [--payments URL] [--effects FILE]
        the gateway's worker: once every approval of the pause is decided, resumes the run once

`--gateway` and `--payments` default to the configured addresses (examples/addresses.py:
$HITL_GATEWAY_URL or the gateway's $HITL_SERVER_* variables, and $HITL_PAYMENTS_URL).
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
from hitl_sdk import DurableRun, Suspended, Waiting

from examples.addresses import DEFAULT_PAYMENTS_URL, PAYMENTS_URL_VAR, gateway_url, payments_url

__all__ = ["charge", "invoices_in", "main", "parse_args", "summary"]

_INVOICE = re.compile(r"\b(INV-[A-Za-z0-9]+):(\d+)\b")


def invoices_in(text: str) -> list[tuple[str, int]]:
    """The invoices a prompt names, as `INV-1:4200` (id and amount in cents): the scripted
    models ask to pay each of them, all in one step (parallel tool calls)."""
    return [(m.group(1), int(m.group(2))) for m in _INVOICE.finditer(text)]


def summary(results: list[str]) -> str:
    """The scripted models' last word: every tool result, in order."""
    return "Done. " + " | ".join(results)


def note(effects: str | None, what: str) -> None:
    """One line per executed effect (the tests count them)."""
    if effects:
        with Path(effects).open("a") as fh:
            fh.write(what + "\n")


async def _post_charge(payments: str, effects: str | None, invoice: str, amount: int, key: str) -> dict[str, Any]:
    note(effects, f"charge {invoice} {amount}")
    async with (
        aiohttp.ClientSession(raise_for_status=True) as http,
        http.post(
            f"{payments}/charges", json={"amount": amount, "run_id": invoice}, headers={"Idempotency-Key": key}
        ) as resp,
    ):
        result: dict[str, Any] = await resp.json()
        return result


async def charge(run: DurableRun, payments: str, effects: str | None, invoice: str, amount: int) -> str:
    """The side effect: charge `invoice` once. A journaled step whose idempotency key the payment
    API de-duplicates, so a worker killed after the charge and before the journal entry charges
    nothing more on its retry."""
    step = f"charge:{invoice}"
    key = run.idempotency_key(step, {"invoice": invoice, "amount": amount})
    receipt = await run.step(step, _post_charge, payments, effects, invoice, amount, key)
    return f"charged {invoice} {amount} as {receipt['id']}"


def parse_args(argv: list[str], *, worker: str, extra: Callable[[argparse.ArgumentParser], None] | None = None) -> Any:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["start", "resume"])
    p.add_argument("--run-id")
    p.add_argument("--gateway", default=gateway_url(), help="default: the gateway's configured address")
    p.add_argument("--api-key", default=os.environ.get("HITL_API_KEY"))
    p.add_argument("--invoices", default="INV-1:4200", help="what to pay, e.g. INV-1:4200,INV-2:1500")
    p.add_argument("--channel", action="append", help="where the cards go (default: web)")
    p.add_argument("--worker", default=worker, help="the gateway's [workers.NAME] that resumes the run")
    p.add_argument("--payments", default=payments_url(), help=f"default: ${PAYMENTS_URL_VAR} or {DEFAULT_PAYMENTS_URL}")
    p.add_argument("--effects", help="append one line per executed charge here")
    if extra:
        extra(p)
    args = p.parse_args(argv)
    args.channel = args.channel or ["web"]
    return args


async def main(
    args: Any,
    start: Callable[[DurableRun], Awaitable[Any]],
    resume: Callable[[DurableRun], Awaitable[Any]],
) -> int:
    """Open the run (the agent's own, or the worker's from its environment), run `start` or
    `resume`, and exit 0 when it suspends or has nothing to do."""
    if args.mode == "start":
        run = await DurableRun.open(args.run_id or f"run-{os.getpid()}", gateway_url=args.gateway, api_key=args.api_key)
    else:
        run = await DurableRun.from_env()
    async with run:
        try:
            result = await (start(run) if args.mode == "start" else resume(run))
        except Suspended as s:
            print(f"suspended on {', '.join(s.approval_ids)}; waiting costs nothing, exiting")
            return 0
        except Waiting as w:
            print(f"nothing to do here: {w}")
            return 0
    print(f"run {run.run_id} finished: {result}")
    return 0
