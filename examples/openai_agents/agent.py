"""The OpenAI Agents SDK example: an agent whose `pay_invoice` tool needs approval.

    python -m examples.openai_agents.agent start --run-id R --gateway URL --api-key K
    worker: python -m examples.openai_agents.agent resume --payments URL

Offline: `ScriptedModel` (an `agents.models.interface.Model`) asks to pay every invoice the
prompt names, all at once, then reports the tool results. No API key, no network.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from hitl_sdk import DurableRun
from hitl_sdk.integrations.openai_agents import AgentsApprovals
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from examples.framework_common import charge, invoices_in, main, parse_args, summary


class ScriptedModel(Model):
    """Turn 1: one `pay_invoice` call per invoice in the prompt. Turn 2: the tools' outputs."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kw: Any) -> ModelResponse:
        items = input if isinstance(input, list) else [{"role": "user", "content": input}]
        results = [str(i["output"]) for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
        if results:
            text = ResponseOutputText(type="output_text", text=summary(results), annotations=[])
            out: list[Any] = [
                ResponseOutputMessage(type="message", id="msg_1", role="assistant", status="completed", content=[text])
            ]
        else:
            prompt = " ".join(str(i.get("content", "")) for i in items if isinstance(i, dict))
            out = [
                ResponseFunctionToolCall(
                    type="function_call",
                    id=f"fc_{invoice}",
                    call_id=f"call_{invoice}",
                    name="pay_invoice",
                    arguments=json.dumps({"invoice": invoice, "amount": amount}),
                )
                for invoice, amount in invoices_in(prompt)
            ]
        return ModelResponse(output=out, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kw: Any) -> Any:
        raise NotImplementedError("the example does not stream")


# [docs:openai-agents]
def build_agent(run: DurableRun, args: Any) -> Agent[Any]:
    @function_tool(needs_approval=True)
    async def pay_invoice(invoice: str, amount: int) -> str:
        """Charge an invoice (amount in cents)."""
        return await charge(run, args.payments, args.effects, invoice, amount)  # journaled, keyed

    return Agent(name="payer", instructions="Pay what you are asked to.", tools=[pay_invoice], model=ScriptedModel())


async def start(run: DurableRun, args: Any) -> Any:
    gate = AgentsApprovals(run, worker=args.worker, channels=args.channel)
    result = await Runner.run(build_agent(run, args), f"Pay {args.invoices}")
    return await gate.settle(result)  # Suspended: one approval per interrupted call


async def resume(run: DurableRun, args: Any) -> Any:  # in the gateway's worker
    gate = AgentsApprovals(run, worker=args.worker, channels=args.channel)
    return await gate.resume(build_agent(run, args))  # approve/reject each call, run on once


# [/docs:openai-agents]


if __name__ == "__main__":
    set_tracing_disabled(True)
    options = parse_args(sys.argv[1:], worker="openai-agents")
    sys.exit(asyncio.run(main(options, lambda r: start(r, options), lambda r: resume(r, options))))
