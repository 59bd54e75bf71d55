"""A framework's pause as approvals, against a real gateway (in-process app on a real port):
the rendezvous of the workers of one pause, and LangGraph's Agent Inbox requests end to end."""

from __future__ import annotations

import asyncio
import contextlib
import operator
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from claude_agent_sdk import PermissionResultAllow, ToolPermissionContext
from hitl_sdk import DurableRun, Pause, PendingCall, Resumed, Suspended, UnsupportedRequest, Waiting
from hitl_sdk.integrations.claude_agent_sdk import ClaudeApprovals
from hitl_sdk.integrations.langgraph import LangGraphApprovals
from hitl_sdk.integrations.pydantic_ai import PydanticAIApprovals
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from gateway.core.models import Outcome
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.service.commands import Authority
from gateway.testing import TEST_API_KEY, FakeClock
from tests.integration.gateway_fixture import free_port


class GW:
    def __init__(self, rt: Runtime, url: str) -> None:
        self.rt, self.url = rt, url

    async def worker_run(self, approval_id: str, api_key: str | None = None) -> DurableRun:
        """What a `command` worker of this approval gets: its document and its resume token (and
        an agent key in its environment when the run may pause again)."""
        approval = await self.rt.service.get(approval_id)
        env = {"HITL_GATEWAY_URL": self.url, "HITL_RESUME_TOKEN": self.rt.service.resumes.resume_token(approval)}
        env |= {"HITL_API_KEY": api_key} if api_key else {}
        return await DurableRun.from_env(env=env, document=self.rt.service.resumes.rehydration_document(approval))

    async def approve(self, approval_id: str) -> None:
        await self.rt.service.decide(approval_id, Outcome.APPROVE, "web:bob", authority=Authority.OPERATOR)


@pytest.fixture
async def gw(aiohttp_server: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock) -> GW:
    port = free_port()
    settings = settings_factory(
        server={"public_url": f"http://127.0.0.1:{port}"}, workers={"fw": {"command": ["true"]}}
    )
    rt = Runtime(settings, clock=clock, owner="test")
    await aiohttp_server(create_app(settings, runtime=rt, background=False), port=port)
    return GW(rt, f"http://127.0.0.1:{port}")


async def _pause(gw: GW, run_id: str, keys: list[str]) -> tuple[str, ...]:
    async with await DurableRun.open(run_id, gateway_url=gw.url, api_key=TEST_API_KEY) as run:
        calls = [PendingCall(k, "pay", {"invoice": k}) for k in keys]
        with pytest.raises(Suspended) as suspended:
            await Pause(run, worker="fw").suspend(calls, {"framework": "state"})
    return suspended.value.approval_ids


async def _collect(gw: GW, approval_id: str) -> Resumed | Waiting:
    async with await gw.worker_run(approval_id) as run:
        try:
            return await Pause(run, worker="fw").collect()
        except Waiting as w:
            return w


async def test_a_worker_whose_sibling_is_undecided_waits(gw: GW) -> None:
    first, second = await _pause(gw, "p-1", ["a", "b"])
    assert first != second
    assert await _pause(gw, "p-1", ["a", "b"]) == (first, second)  # a re-run finds the same approvals
    await gw.approve(first)
    assert isinstance(await _collect(gw, first), Waiting)
    await gw.approve(second)
    resumed = await _collect(gw, second)  # the last decision's worker finds both
    assert isinstance(resumed, Resumed) and resumed.state == {"framework": "state"}
    assert {k: d.outcome for k, d in resumed.decisions.items()} == {"a": Outcome.APPROVE, "b": Outcome.APPROVE}
    again = await _collect(gw, second)  # its retry (after a crash) still owns the resume
    assert isinstance(again, Resumed)
    assert isinstance(await _collect(gw, first), Waiting)  # the other worker never does


async def test_workers_deciding_last_at_once_resume_exactly_once(gw: GW) -> None:
    for trial in range(8):
        ids = await _pause(gw, f"race-{trial}", ["a", "b", "c"])
        for approval_id in ids:
            await gw.approve(approval_id)
        results = await asyncio.gather(*(_collect(gw, i) for i in ids))
        assert sum(isinstance(r, Resumed) for r in results) == 1, results


async def test_complete_runs_the_resume_once(gw: GW) -> None:
    [only] = await _pause(gw, "p-2", ["a"])
    await gw.approve(only)
    runs: list[int] = []

    async def resume() -> str:
        runs.append(1)
        return "done"

    for _ in range(2):  # the worker's retry after the resume finished replays it from the journal
        async with await gw.worker_run(only) as run:
            pause = Pause(run, worker="fw")
            assert await pause.complete(await pause.collect(), resume) == "done"
    assert runs == [1]


class InboxState(TypedDict):
    log: Annotated[list[str], operator.add]


def inbox_graph() -> Any:
    """A hand-written graph that asks in the Agent Inbox shape, as `interrupt([request])[0]`."""

    def review(state: InboxState) -> dict[str, Any]:
        request = {
            "action_request": {"action": "deploy", "args": {"env": "prod"}},
            "config": {"allow_accept": True, "allow_edit": False, "allow_respond": True, "allow_ignore": True},
            "description": "Deploy to prod?",
        }
        response = interrupt([request])[0]
        return {"log": [f"{response['type']}:{response['args']}"]}

    graph = StateGraph(InboxState)
    graph.add_node("review", review)
    graph.add_edge(START, "review")
    graph.add_edge("review", END)
    return graph.compile(checkpointer=InMemorySaver())


@pytest.mark.parametrize(
    ("decide", "expected"),
    [
        ("approve", ["accept:None"]),
        ("reject", ["response:not today"]),  # a person's rejection: `response` with the reason
        ("cancel", ["ignore:None"]),  # a cancel (or a timeout): `ignore`
    ],
)
async def test_an_agent_inbox_interrupt_resumes_with_a_human_response(
    gw: GW, tmp_path: Path, decide: str, expected: list[str]
) -> None:
    graph, config = inbox_graph(), {"configurable": {"thread_id": f"t-{decide}"}}
    async with await DurableRun.open(f"inbox-{decide}", gateway_url=gw.url, api_key=TEST_API_KEY) as run:
        gate = LangGraphApprovals(run, worker="fw")
        with pytest.raises(Suspended) as suspended:
            await gate.settle(graph, config, await graph.ainvoke({"log": []}, config, version="v2"))
    approval = await gw.rt.service.get(suspended.value.approval_id)
    assert (approval.title, approval.summary, approval.args) == (
        'deploy(env="prod")',
        "Deploy to prod?",
        {"env": "prod"},
    )
    if decide == "cancel":
        await gw.rt.service.cancel(approval.id, "operator:api", "release frozen")
    else:
        comment = "not today" if decide == "reject" else None
        await gw.rt.service.decide(
            approval.id, Outcome(decide), "web:bob", comment=comment, authority=Authority.OPERATOR
        )
    async with await gw.worker_run(approval.id) as worker:
        out = await LangGraphApprovals(worker, worker="fw").resume(graph, config)
    assert out == {"log": expected}


def sequential_payer(turns: list[int]) -> Any:
    """A Pydantic AI agent that pays INV-1, and only once that is done asks to pay INV-2."""

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turns.append(1)
        paid = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if len(paid) < 2:
            invoice = f"INV-{len(paid) + 1}"
            return ModelResponse(parts=[ToolCallPart("pay", {"invoice": invoice}, tool_call_id=f"c{len(paid)}")])
        return ModelResponse(parts=[TextPart(" | ".join(str(p.content) for p in paid))])

    agent = Agent(FunctionModel(script), output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def pay(invoice: str) -> str:
        return f"paid {invoice}"

    return agent


async def test_a_resumed_run_that_pauses_again_suspends_anew(gw: GW) -> None:
    turns: list[int] = []
    agent = sequential_payer(turns)
    async with await DurableRun.open("again", gateway_url=gw.url, api_key=TEST_API_KEY) as run:
        with pytest.raises(Suspended) as first:
            await PydanticAIApprovals(run, worker="fw").settle(await agent.run("pay both"))
    await gw.approve(first.value.approval_id)
    for _ in range(2):  # the worker, and its retry: the second pause is journaled, not asked twice
        async with await gw.worker_run(first.value.approval_id, api_key=TEST_API_KEY) as worker:
            with pytest.raises(Suspended) as second:
                await PydanticAIApprovals(worker, worker="fw").resume(agent)
    assert len(turns) == 2  # the retry replayed the journaled resume: the model was not asked again
    approvals = await gw.rt.store.list_approvals(run_id="again")
    assert sorted(a.step for a in approvals) == ["pay:c0", "pay:c1"]
    assert second.value.approval_id != first.value.approval_id
    await gw.approve(second.value.approval_id)
    async with await gw.worker_run(second.value.approval_id) as worker:
        assert await PydanticAIApprovals(worker, worker="fw").resume(agent) == "paid INV-1 | paid INV-2"


async def test_a_re_run_with_new_call_ids_suspends_on_the_recorded_calls_and_state(gw: GW) -> None:
    async with await DurableRun.open("rerun", gateway_url=gw.url, api_key=TEST_API_KEY) as run:
        calls = [PendingCall("call_1", "pay", {"invoice": "INV-1"}), PendingCall("call_2", "pay", {"invoice": "INV-2"})]
        with pytest.raises(Suspended) as first:
            await Pause(run, worker="fw").suspend(calls, {"checkpoint": "cp-1"})
    async with await DurableRun.open("rerun", gateway_url=gw.url, api_key=TEST_API_KEY) as run:
        renamed = [PendingCall(f"new_{c.key}", c.tool, c.args) for c in calls]  # a real model's new ids
        with pytest.raises(Suspended) as again:
            await Pause(run, worker="fw").suspend(renamed, {"checkpoint": "cp-2"})
    assert again.value.approval_ids == first.value.approval_ids
    assert len(await gw.rt.store.list_approvals(run_id="rerun")) == 2
    one, two = first.value.approval_ids
    await gw.approve(one)
    assert isinstance(await _collect(gw, one), Waiting)
    await gw.approve(two)
    resumed = await _collect(gw, two)
    assert isinstance(resumed, Resumed) and resumed.state == {"checkpoint": "cp-1"}  # the recorded state
    assert [c.key for c in resumed.calls] == ["call_1", "call_2"]


async def test_a_worker_s_retry_that_pauses_anew_with_new_ids_finds_the_same_approvals(gw: GW) -> None:
    [only] = await _pause(gw, "nested", ["a"])
    await gw.approve(only)
    made = []
    for attempt in range(2):  # the worker, killed inside its resume's pause, and its retry
        async with await gw.worker_run(only, api_key=TEST_API_KEY) as run:
            pause = Pause(run, worker="fw")
            assert pause.claim_step().startswith("pause:after:")
            with pytest.raises(Suspended) as again:
                await pause.suspend([PendingCall(f"b{attempt}", "pay", {"invoice": "b"})], {"turn": attempt})
            made.append(again.value.approval_ids)
    assert made[0] == made[1]
    assert sorted(a.step for a in await gw.rt.store.list_approvals(run_id="nested")) == ["pay:a", "pay:b0"]


@pytest.mark.subprocess  # an args_schema is checked in the gateway's schema process pool
async def test_editable_and_args_schema_go_to_the_suspend_of_their_tool_only(gw: GW) -> None:
    schema = {"type": "object", "properties": {"amount": {"type": "integer", "maximum": 5000}}}
    async with await DurableRun.open("terms", gateway_url=gw.url, api_key=TEST_API_KEY) as run:
        pause = Pause(run, worker="fw", editable={"pay": ["amount"]}, args_schema={"pay": schema})
        calls = [PendingCall("c1", "pay", {"amount": 4200}), PendingCall("c2", "refund", {"amount": 10})]
        with pytest.raises(Suspended) as suspended:
            await pause.suspend(calls, {})
    pay, refund = [await gw.rt.service.get(i) for i in suspended.value.approval_ids]
    assert pay.terms is not None and pay.terms.editable == ("amount",) and pay.terms.schema == schema
    assert refund.terms is None


@pytest.mark.parametrize("editable", ["amount", ["amount", 3], {"amount": True}])
def test_editable_is_checked_when_the_gate_is_made(editable: Any) -> None:
    run = DurableRun("r", journal=None)  # type: ignore[arg-type]  # nothing is journaled here
    with pytest.raises(TypeError, match=re.escape("editable['pay']: True, or a list of the arg names")):
        Pause(run, worker="fw", editable={"pay": editable})


async def test_langgraph_refuses_editable_for_a_request_that_allows_no_edit(gw: GW) -> None:
    graph, config = inbox_graph(), {"configurable": {"thread_id": "t-edit"}}  # allow_edit False
    async with await DurableRun.open("no-edit", gateway_url=gw.url, api_key=TEST_API_KEY) as run:
        gate = LangGraphApprovals(run, worker="fw", editable={"deploy": ["env"]})
        with pytest.raises(UnsupportedRequest, match="editable names 'deploy', but its review does not allow 'edit'"):
            await gate.settle(graph, config, await graph.ainvoke({"log": []}, config, version="v2"))
    assert await gw.rt.store.list_approvals(run_id="no-edit") == []


async def test_a_restarted_claude_session_asking_the_same_call_finds_its_approval_and_runs_the_edit(gw: GW) -> None:
    tool, asked = "mcp__pay__pay_invoice", {"invoice": "INV-1", "amount": 4200}
    async with await DurableRun.open("claude", gateway_url=gw.url, api_key=TEST_API_KEY) as run:
        gate = ClaudeApprovals(run, poll=0.01, max_poll=0.02, editable={tool: ["amount"]})
        waiting = asyncio.create_task(gate.can_use_tool(tool, asked, ToolPermissionContext(tool_use_id="toolu_1")))
        for _ in range(1000):  # until the session's approval is there
            if made := await gw.rt.store.list_approvals(run_id="claude"):
                break
            await asyncio.sleep(0.01)
        waiting.cancel()  # the session dies while it waits
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
    [approval] = made
    assert approval.terms is not None and approval.terms.editable == ("amount",)
    edited = {**asked, "amount": 3900}
    await gw.rt.service.decide(approval.id, Outcome.APPROVE, "web:bob", authority=Authority.OPERATOR, args=edited)
    async with await DurableRun.open("claude", gateway_url=gw.url, api_key=TEST_API_KEY) as run:
        gate = ClaudeApprovals(run, poll=0.01, max_poll=0.02, editable={tool: ["amount"]})  # the restarted session
        async with asyncio.timeout(10):
            answer = await gate.can_use_tool(tool, asked, ToolPermissionContext(tool_use_id="toolu_9"))
    assert answer == PermissionResultAllow(updated_input=edited)  # the tool runs with the approved input
    assert len(await gw.rt.store.list_approvals(run_id="claude")) == 1
