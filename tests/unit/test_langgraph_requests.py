"""LangGraph's human-in-the-loop shapes <-> gateway decisions (pure mapping, no graph)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hitl_sdk import Decision, Outcome, Source, UnsupportedRequest
from hitl_sdk.integrations.langgraph_requests import calls_from_interrupt, resume_values

NOW = datetime(2026, 12, 1, tzinfo=UTC)
ARGS = {"invoice": "INV-1", "amount": 4200}


def decision(outcome: str = "approve", source: Source = Source.HUMAN, **kw: Any) -> Decision:
    return Decision(Outcome(outcome), kw.pop("by", "telegram:111"), NOW, source, **kw)


def inbox(**config: bool) -> dict[str, Any]:
    flags = {"allow_accept": True, "allow_edit": False, "allow_respond": True, "allow_ignore": True} | config
    return {"action_request": {"action": "pay", "args": ARGS}, "config": flags, "description": "Pay it?"}


def per_call(schema: Any = None) -> list[Any]:
    value = {"type": "tool_approval", "tool_call_id": "c1", "name": "pay", "args": ARGS, "description": "d"}
    return calls_from_interrupt("i1", value, schema)


def test_a_per_call_request_is_one_approval_answered_by_interrupt_id() -> None:
    [call] = per_call()
    assert (call.key, call.tool, call.args, call.description) == ("i1", "pay", ARGS, "d")
    assert resume_values([call], {"i1": decision()}) == {"i1": {"type": "approve"}}
    reject = decision("reject", comment="too much")
    assert resume_values([call], {"i1": reject}) == {"i1": {"type": "reject", "message": "too much"}}


def test_per_call_reads_the_allowed_decisions_from_the_response_schema() -> None:
    schema = {"discriminator": {"mapping": {"approve": "#/a", "respond": "#/r"}, "propertyName": "type"}}
    [call] = per_call(schema)
    # reject is not allowed: a rejection goes back as `respond` with the reason
    got = resume_values([call], {"i1": decision("reject")})
    assert got == {"i1": {"type": "respond", "message": "Rejected by telegram:111"}}
    with pytest.raises(UnsupportedRequest, match="cannot be approved and rejected"):
        per_call({"properties": {"type": {"const": "approve"}}})


def test_a_batched_request_is_one_approval_per_action_resumed_in_order() -> None:
    value = {
        "action_requests": [{"name": "pay", "args": ARGS}, {"name": "mail", "args": {"to": "x"}}],
        "review_configs": [
            {"action_name": "pay", "allowed_decisions": ["approve", "reject"]},
            {"action_name": "mail", "allowed_decisions": ["approve", "edit", "reject"]},
        ],
    }
    calls = calls_from_interrupt("i9", value)
    assert [(c.key, c.tool) for c in calls] == [("i9.0", "pay"), ("i9.1", "mail")]
    decisions = {"i9.1": decision("reject", source=Source.POLICY), "i9.0": decision()}
    assert resume_values(list(reversed(calls)), decisions) == {
        "i9": {
            "decisions": [
                {"type": "approve"},
                {"type": "reject", "message": "No decision within the deadline: reject by policy"},
            ]
        }
    }


def test_agent_inbox_accept_response_and_ignore() -> None:
    [call] = calls_from_interrupt("i2", inbox())
    assert call.description == "Pay it?"
    assert resume_values([call], {"i2": decision()}) == {"i2": {"type": "accept", "args": None}}
    # a person's rejection carries the reason; a timeout or a cancel is `ignore`
    human = decision("reject", comment="no")
    assert resume_values([call], {"i2": human}) == {"i2": {"type": "response", "args": "no"}}
    for quiet in (decision("reject", Source.POLICY, by="policy"), decision("reject", Source.CANCEL, by="api")):
        assert resume_values([call], {"i2": quiet}) == {"i2": {"type": "ignore", "args": None}}


def test_agent_inbox_fallbacks_and_lists() -> None:
    [edit_only] = calls_from_interrupt("i3", inbox(allow_accept=False, allow_edit=True))
    approved = resume_values([edit_only], {"i3": decision()})
    assert approved == {"i3": {"type": "edit", "args": {"action": "pay", "args": ARGS}}}
    [no_ignore] = calls_from_interrupt("i4", inbox(allow_ignore=False))
    timeout = decision("reject", Source.POLICY, by="policy")
    assert resume_values([no_ignore], {"i4": timeout})["i4"]["type"] == "response"
    calls = calls_from_interrupt("i5", [inbox(), inbox()])
    assert [c.key for c in calls] == ["i5.0", "i5.1"]
    got = resume_values(calls, {"i5.0": decision(), "i5.1": decision("reject", comment="x")})
    assert got == {"i5": [{"type": "accept", "args": None}, {"type": "response", "args": "x"}]}


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (inbox(allow_accept=False), "neither accept nor edit"),
        (inbox(allow_respond=False, allow_ignore=False), "neither response nor ignore"),
        ({"question": "what now?"}, "not a human-in-the-loop request"),
        ("plain text", "not a human-in-the-loop request"),
    ],
)
def test_interrupts_that_cannot_be_approvals_are_refused(value: Any, words: str) -> None:
    with pytest.raises(UnsupportedRequest, match=words):
        calls_from_interrupt("i6", value)


def test_edited_args_become_edits_where_the_request_allows_them() -> None:
    """Ready for approve-with-edits (issue 18): the decision's `args` differ from `original_args`."""
    edited = decision(args={"invoice": "INV-1", "amount": 4000}, original_args=ARGS)
    [call] = per_call()
    assert resume_values([call], {"i1": edited}) == {
        "i1": {"type": "edit", "edited_action": {"name": "pay", "args": {"invoice": "INV-1", "amount": 4000}}}
    }
    [inbox_call] = calls_from_interrupt("i2", inbox(allow_edit=True))
    assert resume_values([inbox_call], {"i2": edited})["i2"] == {
        "type": "edit",
        "args": {"action": "pay", "args": {"invoice": "INV-1", "amount": 4000}},
    }
    # where edits are not allowed, the unapproved original never runs: a rejection naming the edit
    [no_edit] = calls_from_interrupt("i7", inbox())
    answer = resume_values([no_edit], {"i7": edited})["i7"]
    assert answer["type"] == "response" and '"amount":4000' in answer["args"]
    # the same args as asked for are a plain approval
    same = decision(args=ARGS, original_args=ARGS)
    assert resume_values([call], {"i1": same}) == {"i1": {"type": "approve"}}


def test_langchains_default_description_loses_the_python_repr_of_the_args() -> None:
    """HumanInTheLoopMiddleware words a call it has no description for with `Args: {repr}`: the
    approval's summary keeps its words and the tool's name, not a Python dict (the card shows
    the args itself). The interrupt is a real agent's, through LangChain's public API."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    class OneCall(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "one-call"

        def bind_tools(self, tools: Any, **kw: Any) -> Any:
            return self

        def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
            call = {"name": "pay", "args": ARGS, "id": "c1", "type": "tool_call"}
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="", tool_calls=[call]))])

    @tool
    def pay(invoice: str, amount: int) -> str:
        """Pay an invoice."""
        return "paid"

    review = HumanInTheLoopMiddleware({"pay": True})
    agent = create_agent(OneCall(), [pay], middleware=[review], checkpointer=InMemorySaver())
    out = agent.invoke({"messages": [{"role": "user", "content": "pay"}]}, {"configurable": {"thread_id": "t"}})
    [interrupt] = out["__interrupt__"]
    assert "'invoice': 'INV-1'" in interrupt.value["action_requests"][0]["description"]  # what LangChain writes
    [call] = calls_from_interrupt(interrupt.id, interrupt.value)
    assert call.description == "Tool execution requires approval\n\nTool: `pay`"
    assert "{'" not in call.description and call.args == ARGS
    own = {**interrupt.value["action_requests"][0], "description": "Pay INV-1?\n\nArgs: {'a': 1}"}
    [call] = calls_from_interrupt("i5", {**interrupt.value, "action_requests": [own]})
    assert call.description == own["description"]  # a description of the tool's own stays as it is
