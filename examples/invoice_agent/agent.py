"""A 6-step invoice agent: research -> validate -> draft -> approval -> charge -> email.

    start:  python -m examples.invoice_agent.agent start --run-id inv-1 --customer ACME
            (suspends on the approval and exits 0)
    resume: the gateway's worker runs `python -m examples.invoice_agent.agent resume`
            (HITL_* environment + the rehydration document on stdin)

The gateway's address and the payment API's come from examples/addresses.py ($HITL_GATEWAY_URL
or the gateway's $HITL_SERVER_* variables; $HITL_PAYMENTS_URL), or `--gateway` / `--payments`.

Every step is journaled in the gateway; the charge carries run.idempotency_key("charge", ...),
so a worker killed at any moment and run again never charges twice.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import aiohttp

from examples.addresses import DEFAULT_PAYMENTS_URL, PAYMENTS_URL_VAR, gateway_url, payments_url
from gateway.sdk import DurableRun, Outcome, Suspended


class Effects:
    """Appends one line per executed step function (the tests count them)."""

    def __init__(self, path: str | None) -> None:
        self.path = Path(path) if path else None

    def note(self, what: str) -> None:
        if self.path is not None:
            with self.path.open("a") as fh:
                fh.write(what + "\n")


async def research(fx: Effects, customer: str) -> dict[str, Any]:
    fx.note("research")
    return {"customer": customer, "amount": 4200, "currency": "EUR", "email": f"billing@{customer.lower()}.test"}


def validate(fx: Effects, invoice: dict[str, Any]) -> bool:
    fx.note("validate")
    if invoice["amount"] <= 0:
        raise ValueError("the amount must be positive")
    return True


def draft(fx: Effects, invoice: dict[str, Any]) -> str:
    fx.note("draft")
    return f"Invoice for {invoice['customer']}: {invoice['amount'] / 100:.2f} {invoice['currency']}"


async def charge(fx: Effects, payments: str, run_id: str, invoice: dict[str, Any], key: str) -> dict[str, Any]:
    fx.note("charge")
    async with (
        aiohttp.ClientSession(raise_for_status=True) as session,
        session.post(
            f"{payments}/charges",
            json={"amount": invoice["amount"], "run_id": run_id},
            headers={"Idempotency-Key": key},
        ) as resp,
    ):
        result: dict[str, Any] = await resp.json()  # a 429/5xx raised above is retried by run.step
        return result


def email(fx: Effects, invoice: dict[str, Any], text: str) -> dict[str, Any]:
    fx.note("email")
    return {"to": invoice["email"], "body": text}


INVOICE_SCHEMA = {
    "type": "object",
    "properties": {
        "customer": {"type": "string"},
        "amount": {"type": "integer", "minimum": 1, "maximum": 1_000_000, "description": "cents"},
        "currency": {"enum": ["EUR", "USD"]},
        "email": {"type": "string"},
    },
    "required": ["customer", "amount", "currency"],
}


async def invoice_run(run: DurableRun, customer: str, payments: str, fx: Effects) -> Any:
    invoice = await run.step("research", research, fx, customer)
    await run.step("validate", validate, fx, invoice)
    text = await run.step("draft", draft, fx, invoice)
    decision = await run.approval(
        "approval",
        title=f"Charge {invoice['customer']} {invoice['amount'] / 100:.2f} {invoice['currency']}",
        summary=text,
        args=invoice,
        worker="invoice",
        args_schema=INVOICE_SCHEMA,
        editable=["amount"],  # the approver may lower (or raise) the amount, within the schema
    )
    if decision.outcome is not Outcome.APPROVE:
        return await run.step("email", email, fx, invoice, f"Not charged ({decision.decided_by}).")
    # What runs is what was approved: the edited args when the approver changed them, and the
    # charge's idempotency key is derived from those approved args.
    invoice = decision.edited_args or invoice
    key = run.idempotency_key("charge", invoice)
    receipt = await run.step("charge", charge, fx, payments, run.run_id, invoice, key)
    return await run.step("email", email, fx, invoice, f"{text}. Charged as {receipt['id']}.")


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["start", "resume"])
    p.add_argument("--run-id")
    p.add_argument("--customer", default="ACME")
    p.add_argument("--gateway", default=gateway_url(), help="default: the gateway's configured address")
    p.add_argument("--api-key", default=os.environ.get("HITL_API_KEY"))
    p.add_argument("--payments", default=payments_url(), help=f"default: ${PAYMENTS_URL_VAR} or {DEFAULT_PAYMENTS_URL}")
    p.add_argument("--effects", help="append each executed step function's name here")
    return p.parse_args(argv)


async def amain(argv: list[str]) -> int:
    args = parse_args(argv)
    fx = Effects(args.effects)
    if args.mode == "start":
        run = await DurableRun.open(args.run_id or f"inv-{os.getpid()}", gateway_url=args.gateway, api_key=args.api_key)
    else:
        run = await DurableRun.from_env()
    async with run:
        try:
            result = await invoice_run(run, args.customer, args.payments, fx)
        except Suspended as s:
            print(f"suspended on approval {s.approval_id}; waiting costs nothing, exiting")
            return 0
    print(f"run {run.run_id} finished: {result}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(amain(sys.argv[1:])))
