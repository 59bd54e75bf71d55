"""The README's agent snippet (the `agent` function), runnable as written against `make run`.

    python examples/quickstart.py            # runs two steps, suspends on the approval, exits 0
    # the worker the gateway runs once it is decided (docs/getting-started.md):
    HITL_WORKERS_QUICKSTART_COMMAND='["{python}", "examples/quickstart.py", "resume"]'

The API key comes from $HITL_API_KEY, else from the dev secrets `make run` keeps in ./var.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from gateway.sdk import DurableRun, Outcome, Suspended

try:  # examples/addresses.py: where `make run` listens (HITL_SERVER_PORT...), or the worker's HITL_GATEWAY_URL
    from examples.addresses import gateway_url
except ImportError:  # run as a script, `python examples/quickstart.py`: examples/ is sys.path[0]
    from addresses import gateway_url  # type: ignore[no-redef]

GATEWAY = gateway_url()
DEV_SECRETS = Path("var/dev-secrets.json")
KEY = os.environ.get("HITL_API_KEY") or (json.loads(DEV_SECRETS.read_text())["api_key"] if DEV_SECRETS.exists() else "")


def research(customer: str) -> dict[str, Any]:  # stand-ins for the agent's real tools
    return {"customer": customer, "amount": 4200, "currency": "EUR"}


def draft(invoice: dict[str, Any]) -> str:
    return f"Invoice for {invoice['customer']}: {invoice['amount'] / 100:.2f} {invoice['currency']}"


def charge(invoice: dict[str, Any], key: str) -> dict[str, str]:
    return {"charge": f"ch_{key[:12]}"}  # a real payment API de-duplicates by this key


def email(invoice: dict[str, Any], outcome: str) -> str:
    return f"told {invoice['customer']}: {outcome}"


# fmt: off
# --8<-- [start:sdk]
async def agent(run: DurableRun) -> None:
    invoice = await run.step("research", research, "ACME")          # journaled, skipped on replay
    text = await run.step("draft", draft, invoice)
    decision = await run.approval("approval", title="Charge ACME 42 EUR", summary=text,
                                  args=invoice, worker="quickstart")  # suspends the first time
    if decision.outcome is Outcome.APPROVE:
        key = run.idempotency_key("charge", invoice)                 # same key on every replay
        await run.step("charge", charge, invoice, key)              # the payment API de-duplicates
    await run.step("email", email, invoice, decision.outcome.value)
# --8<-- [end:sdk]


async def main() -> int:
    resuming = sys.argv[1:] == ["resume"]                            # the worker runs `... resume`
    run = await (DurableRun.from_env() if resuming else
                 DurableRun.open("quickstart-1", gateway_url=GATEWAY, api_key=KEY))
    async with run:
        try:
            await agent(run)
        except Suspended as s:                                       # waiting costs nothing: exit 0
            print(f"suspended: approve it at {GATEWAY}/approvals/{s.approval_id}")
    return 0
# fmt: on


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
