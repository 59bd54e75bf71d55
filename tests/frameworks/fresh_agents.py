"""The three framework examples as a real model would drive them, for the tests of re-runs and
edits: `python -m tests.frameworks.fresh_agents start|resume --framework NAME [options]`.

- The scripted model of each example gives its tool calls NEW ids on every process (a real
  model's tool-call ids are never the same twice), so a re-run of `start` pauses on the same
  calls under other ids.
- `--editable TOOL:ARG` (repeatable) passes `editable={TOOL: [ARG, ...]}` to the gate.
- `--die-after N` (for `start`): the process SIGKILLs itself right after the gateway answered
  its N-th suspend, as a crash half-way through a pause would.

The tools, the charge and the worker's resume are the examples' own.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import uuid
from typing import Any

from hitl_sdk import DurableRun
from hitl_sdk.client import GatewayClient

from examples.framework_common import main, parse_args

NONCE = uuid.uuid4().hex[:8]  # this process's tool-call ids end with it


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--framework", choices=["langgraph", "pydantic-ai", "openai-agents"], required=True)
    p.add_argument("--editable", action="append", default=[], help="TOOL:ARG, an arg an approver may change")
    p.add_argument("--die-after", type=int, default=0, help="SIGKILL after this many suspends (0: never)")
    p.add_argument("--interrupt-mode", choices=["per_call", "batched"], default="per_call")
    p.add_argument("--checkpoints", default="var/langgraph-checkpoints.sqlite")


def _editable(args: Any) -> dict[str, Any]:
    """The gate's `editable=` from `--editable TOOL:ARG` (no keyword at all without one)."""
    out: dict[str, list[str]] = {}
    for item in args.editable:
        tool, _, arg = item.partition(":")
        out.setdefault(tool, []).append(arg)
    return {"editable": out} if out else {}


def die_after(n: int) -> None:
    """SIGKILL this process once the gateway has answered `n` suspends."""
    suspend, done = GatewayClient.suspend, []

    async def counted(self: GatewayClient, **kw: Any) -> dict[str, Any]:
        reply = await suspend(self, **kw)
        done.append(reply["id"])
        if len(done) >= n:
            os.kill(os.getpid(), signal.SIGKILL)
        return reply

    GatewayClient.suspend = counted  # type: ignore[method-assign]


async def pydantic_ai(args: Any) -> int:
    from hitl_sdk.integrations.pydantic_ai import PydanticAIApprovals
    from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from examples.pydantic_ai_agent import agent as ex

    def fresh(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        response = ex.scripted(messages, info)
        for part in response.parts:
            if isinstance(part, ToolCallPart):
                part.tool_call_id = f"{part.tool_call_id}-{NONCE}"
        return response

    def gate(run: DurableRun) -> PydanticAIApprovals:
        return PydanticAIApprovals(run, worker=args.worker, channels=args.channel, **_editable(args))

    async def start(run: DurableRun) -> Any:
        result = await ex.agent.run(f"Pay {args.invoices}", deps=ex.Deps(run, args))
        return await gate(run).settle(result)

    async def resume(run: DurableRun) -> Any:
        return await gate(run).resume(ex.agent, deps=ex.Deps(run, args))

    with ex.agent.override(model=FunctionModel(fresh)):
        return await main(args, start, resume)


async def openai_agents(args: Any) -> int:
    from agents import set_tracing_disabled
    from agents.items import ModelResponse
    from hitl_sdk.integrations.openai_agents import AgentsApprovals

    from examples.openai_agents import agent as ex

    set_tracing_disabled(True)

    class FreshModel(ex.ScriptedModel):
        async def get_response(self, *a: Any, **kw: Any) -> ModelResponse:
            response = await super().get_response(*a, **kw)
            response.output = [
                o.model_copy(update={"call_id": f"{o.call_id}-{NONCE}"}) if getattr(o, "call_id", None) else o
                for o in response.output
            ]
            return response

    def agent(run: DurableRun) -> Any:
        return ex.build_agent(run, args).clone(model=FreshModel())

    def gate(run: DurableRun) -> AgentsApprovals:
        return AgentsApprovals(run, worker=args.worker, channels=args.channel, **_editable(args))

    async def start(run: DurableRun) -> Any:
        from agents import Runner

        return await gate(run).settle(await Runner.run(agent(run), f"Pay {args.invoices}"))

    async def resume(run: DurableRun) -> Any:
        return await gate(run).resume(agent(run))

    return await main(args, start, resume)


async def langgraph(args: Any) -> int:
    from hitl_sdk.integrations.langgraph import LangGraphApprovals
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from examples.langgraph_agent import agent as ex

    class FreshChatModel(ex.ScriptedChatModel):
        def _generate(self, *a: Any, **kw: Any) -> Any:
            result = super()._generate(*a, **kw)
            for generation in result.generations:
                message = generation.message
                if isinstance(message, AIMessage):
                    for call in message.tool_calls:
                        call["id"] = f"{call['id']}-{NONCE}"
            return result

    ex.ScriptedChatModel = FreshChatModel  # type: ignore[misc]  # what build_graph builds

    def gate(run: DurableRun) -> LangGraphApprovals:
        return LangGraphApprovals(
            run, worker=args.worker, channels=args.channel, output=ex.final_text, **_editable(args)
        )

    async with AsyncSqliteSaver.from_conn_string(args.checkpoints) as checkpointer:

        async def start(run: DurableRun) -> Any:
            graph, config = ex.build_graph(run, args, checkpointer), {"configurable": {"thread_id": run.run_id}}
            out = await graph.ainvoke({"messages": [HumanMessage(f"Pay {args.invoices}")]}, config, version="v2")
            return await gate(run).settle(graph, config, out)

        async def resume(run: DurableRun) -> Any:
            graph = ex.build_graph(run, args, checkpointer)
            return await gate(run).resume(graph, {"configurable": {"thread_id": run.run_id}})

        return await main(args, start, resume)


if __name__ == "__main__":
    options = parse_args(sys.argv[1:], worker="fresh", extra=_options)
    if options.die_after:
        die_after(options.die_after)
    run = {"langgraph": langgraph, "pydantic-ai": pydantic_ai, "openai-agents": openai_agents}[options.framework]
    sys.exit(asyncio.run(run(options)))
