"""The Pydantic AI example: an agent whose `pay_invoice` tool requires approval.

    python -m examples.pydantic_ai_agent.agent start --run-id R --gateway URL --api-key K
    worker: python -m examples.pydantic_ai_agent.agent resume --payments URL

Offline: a `FunctionModel` asks to pay every invoice the prompt names, all at once, then reports
the tool results; `ALLOW_MODEL_REQUESTS = False` makes sure nothing else is ever called.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from typing import Any

from hitl_sdk import DurableRun
from hitl_sdk.integrations.pydantic_ai import PydanticAIApprovals
from pydantic_ai import Agent, DeferredToolRequests, RunContext, models
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from examples.framework_common import charge, invoices_in, main, parse_args, summary

models.ALLOW_MODEL_REQUESTS = False  # no real model, ever


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Turn 1: one `pay_invoice` call per invoice in the prompt. Turn 2: the tools' results."""
    parts = [p for m in messages for p in m.parts]
    results = [str(p.content) for p in parts if isinstance(p, ToolReturnPart)]
    if results:
        return ModelResponse(parts=[TextPart(summary(results))])
    prompt = " ".join(str(p.content) for p in parts if isinstance(p, UserPromptPart))
    calls = [
        ToolCallPart("pay_invoice", {"invoice": inv, "amount": amount}, tool_call_id=f"call_{inv}")
        for inv, amount in invoices_in(prompt)
    ]
    return ModelResponse(parts=calls)


@dataclass
class Deps:
    run: DurableRun
    args: Any


# [docs:pydantic-ai]
agent = Agent(FunctionModel(scripted), deps_type=Deps, output_type=[str, DeferredToolRequests])


@agent.tool(requires_approval=True)
async def pay_invoice(ctx: RunContext[Deps], invoice: str, amount: int) -> str:
    """Charge an invoice (amount in cents)."""
    run, args = ctx.deps.run, ctx.deps.args
    return await charge(run, args.payments, args.effects, invoice, amount)  # journaled, keyed


async def start(run: DurableRun, args: Any) -> Any:
    gate = PydanticAIApprovals(run, worker=args.worker, channels=args.channel)
    result = await agent.run(f"Pay {args.invoices}", deps=Deps(run, args))
    return await gate.settle(result)  # Suspended: one approval per deferred call


async def resume(run: DurableRun, args: Any) -> Any:  # in the gateway's worker
    gate = PydanticAIApprovals(run, worker=args.worker, channels=args.channel)
    return await gate.resume(agent, deps=Deps(run, args))  # ToolApproved / ToolDenied, run on once


# [/docs:pydantic-ai]


if __name__ == "__main__":
    options = parse_args(sys.argv[1:], worker="pydantic-ai")
    sys.exit(asyncio.run(main(options, lambda r: start(r, options), lambda r: resume(r, options))))
