"""The LangGraph example: a LangChain agent whose `pay_invoice` tool is gated by
`HumanInTheLoopMiddleware` (`--interrupt-mode per_call`, the default, or `batched`), on a SQLite
checkpointer that the worker reopens.

    python -m examples.langgraph_agent.agent start --run-id R --gateway URL --api-key K --checkpoints F
    worker: python -m examples.langgraph_agent.agent resume --payments URL --checkpoints F

Offline: `ScriptedChatModel` asks to pay every invoice the prompt names, all at once, then
reports the tool results. No API key, no network.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from hitl_sdk import DurableRun
from hitl_sdk.integrations.langgraph import LangGraphApprovals
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from examples.framework_common import charge, invoices_in, main, parse_args, summary


class ScriptedChatModel(BaseChatModel):
    """Turn 1: one `pay_invoice` call per invoice in the prompt. Turn 2: the tools' results."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kw: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        results = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
        if results:
            reply = AIMessage(content=summary(results))
        else:
            prompt = " ".join(str(m.content) for m in messages if isinstance(m, HumanMessage))
            calls = [
                {"name": "pay_invoice", "args": {"invoice": inv, "amount": amount}, "id": f"call_{inv}"}
                for inv, amount in invoices_in(prompt)
            ]
            reply = AIMessage(content="", tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=reply)])


def final_text(value: Any) -> str:
    """What the run's journal keeps of the graph's final state: the last message."""
    return str(value["messages"][-1].content)


# [docs:langgraph]
def build_graph(run: DurableRun, args: Any, checkpointer: Any) -> Any:
    @tool
    async def pay_invoice(invoice: str, amount: int) -> str:
        """Charge an invoice (amount in cents)."""
        return await charge(run, args.payments, args.effects, invoice, amount)  # journaled, keyed

    review = HumanInTheLoopMiddleware(
        {"pay_invoice": {"allowed_decisions": ["approve", "edit", "reject"]}}, interrupt_mode=args.interrupt_mode
    )
    return create_agent(ScriptedChatModel(), [pay_invoice], middleware=[review], checkpointer=checkpointer)


async def start(run: DurableRun, args: Any, graph: Any) -> Any:
    gate = LangGraphApprovals(run, worker=args.worker, channels=args.channel, output=final_text)
    config = {"configurable": {"thread_id": run.run_id}}
    out = await graph.ainvoke({"messages": [HumanMessage(f"Pay {args.invoices}")]}, config, version="v2")
    return await gate.settle(graph, config, out)  # Suspended: one approval per request


async def resume(run: DurableRun, args: Any, graph: Any) -> Any:  # in the gateway's worker
    gate = LangGraphApprovals(run, worker=args.worker, channels=args.channel, output=final_text)
    return await gate.resume(graph, {"configurable": {"thread_id": run.run_id}})  # Command(resume=...)


# [/docs:langgraph]


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--interrupt-mode", choices=["per_call", "batched"], default="per_call")
    p.add_argument("--checkpoints", default="var/langgraph-checkpoints.sqlite")


async def amain(args: Any) -> int:
    async with AsyncSqliteSaver.from_conn_string(args.checkpoints) as checkpointer:

        async def with_graph(fn: Any, run: DurableRun) -> Any:
            return await fn(run, args, build_graph(run, args, checkpointer))

        return await main(args, lambda r: with_graph(start, r), lambda r: with_graph(resume, r))


if __name__ == "__main__":
    sys.exit(asyncio.run(amain(parse_args(sys.argv[1:], worker="langgraph", extra=_options))))
