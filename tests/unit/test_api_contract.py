"""The contract is written once (gateway.contract): the SDK's `suspend`, the MCP
`request_approval` tool and the inline policy's keys are held to it here. A difference that is
meant is named below, with its reason; any other fails."""

from __future__ import annotations

import inspect
from typing import Any, get_type_hints

import pytest
from hitl_sdk.client import GatewayClient, SuspendOptions

from gateway import contract
from gateway.contract import components
from gateway.core.errors import ValidationError
from gateway.core.policy_bounds import SETTABLE
from gateway.http import schemas

SUSPEND = set(contract.SuspendBody.model_fields)
# The SDK's own: `extra` passes further fields as they are (nothing the schema lacks is needed).
SDK_ONLY = {"extra"}
# The MCP tool's own: how long this call waits for the decision (not part of the approval).
MCP_ONLY = {"wait_seconds"}
# What the MCP tool does not offer an agent: it has no worker to resume (state, worker,
# code_version), it is the caller (requested_by), and a policy sets the deadline. A trace context
# (traceparent, tracestate) is not the model's to write: the MCP client's own metadata carries it.
MCP_LEAVES_OUT = {"state", "worker", "code_version", "requested_by", "deadline", "traceparent", "tracestate"}


def _length(schema: dict[str, Any]) -> int | None:
    for option in [schema, *(schema.get("anyOf") or ())]:
        if "maxLength" in option:
            return int(option["maxLength"])
    return None


def test_the_sdk_suspend_takes_every_field_of_the_schema() -> None:
    params = inspect.signature(GatewayClient.suspend).parameters
    keywords = {n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    options = set(get_type_hints(SuspendOptions))
    assert not keywords & options, "a field both a keyword and an option"
    assert keywords | options == SUSPEND | SDK_ONLY
    assert {n for n in keywords if params[n].default is inspect.Parameter.empty} == set(
        components()["SuspendBody"]["required"]
    )


async def test_the_mcp_tool_takes_the_schema_s_fields_with_its_limits() -> None:
    pytest.importorskip("mcp")
    from gateway.mcp.client import Gateway
    from gateway.mcp.server import build_server

    tools = await build_server(Gateway("http://127.0.0.1:1"), "key").list_tools()
    tool = next(t for t in tools if t.name == "request_approval").input_schema["properties"]
    assert set(tool) == (SUSPEND - MCP_LEAVES_OUT) | MCP_ONLY
    ours = components()["SuspendBody"]["properties"]
    for name in set(tool) - MCP_ONLY:
        assert _length(tool[name]) == _length(ours[name]), name


def test_the_inline_policy_schema_has_the_keys_an_agent_may_set() -> None:
    assert set(contract.InlinePolicy.model_fields) == {*SETTABLE, "name"}


def test_the_retired_hand_list_is_the_model_s() -> None:
    assert schemas._SUSPEND_FIELDS == SUSPEND
    assert "code_version" in SUSPEND


OK = {"run_id": "r", "step": "s", "title": "t"}
# The 400s the hand parsers gave (field, words), kept word for word: clients and tests read them.
WORDS: list[tuple[Any, dict[str, Any], str, str]] = [
    (schemas.parse_suspend, {}, "run_id", "is required"),
    (schemas.parse_suspend, {**OK, "run_id": None}, "run_id", "is required"),
    (schemas.parse_suspend, {**OK, "step": 3}, "step", "must be a string, got int"),
    (schemas.parse_suspend, {**OK, "title": " \x1c "}, "title", "must not be empty"),
    (schemas.parse_suspend, {**OK, "title": "x" * 301}, "title", "must be at most 300 characters"),
    (schemas.parse_suspend, {**OK, "run_id": " " * 300}, "run_id", "must not be empty"),
    (schemas.parse_suspend, {**OK, "args": []}, "args", "must be a JSON object"),
    (schemas.parse_suspend, {**OK, "channels": ["a"] * 21}, "channels", "at most 20 items"),
    (schemas.parse_suspend, {**OK, "channels": [""] * 21}, "channels", "must be a list of non-empty strings"),
    (schemas.parse_suspend, {**OK, "channels": []}, "channels", "must name at least one channel"),
    (schemas.parse_suspend, {**OK, "approvers": "web:a"}, "approvers", "must be a list of non-empty strings"),
    (schemas.parse_suspend, {**OK, "worker": 1}, "worker", "must be a worker name"),
    (schemas.parse_suspend, {**OK, "policy": 1}, "policy", "must be a policy name or an inline policy object"),
    (schemas.parse_suspend, {**OK, "code_version": "v" * 101}, "code_version", "must be at most 100 characters"),
    (schemas.parse_suspend, {**OK, "deadline": "2031-01-01"}, "deadline", "must be an RFC 3339 date-time"),
    (schemas.parse_suspend, {**OK, "deadline": "2031-02-30T00:00:00Z"}, "deadline", "'2031-02-30T00:00:00Z' is not"),
    # the first problem in the hand parser's order: args before run_id, deadline before code_version
    (schemas.parse_suspend, {"args": 1}, "args", "must be a JSON object"),
    (schemas.parse_suspend, {**OK, "deadline": 1, "code_version": 1}, "deadline", "must be an RFC 3339"),
    (schemas.parse_suspend, {**OK, "zz": 1, "aa": 2}, "aa", "unknown field (allowed: approvers, args, "),
    (schemas.parse_decision, {}, "outcome", "must be 'approve' or 'reject'"),
    (schemas.parse_decision, {"outcome": "approve", "args_hash": ""}, "args_hash", "must be the approval's"),
    (schemas.parse_decision, {"outcome": "approve", "args": 1}, "args", "must be a JSON object (the edited args)"),
    (schemas.parse_decision, {"outcome": "approve", "by": 1}, "by", "must be a string, got int"),
    (schemas.parse_extend, {}, "duration", "is required, like '1h'"),
    (schemas.parse_extend, {"duration": 5}, "duration", "must be a duration like '1h'"),
    (schemas.parse_extend, {"duration": "0s"}, "duration", "must be positive"),
    (schemas.parse_cancel, {"reason": "x" * 2001}, "reason", "must be at most 2000 characters"),
    (schemas.parse_resend, {}, "channel", "is required"),
    (schemas.parse_token_decision, {"outcome": "approve"}, "token", "is required"),
    (schemas.parse_token_decision, {"token": "t", "outcome": None}, "outcome", "must be 'approve' or 'reject'"),
]


@pytest.mark.parametrize(("parse", "body", "field", "words"), WORDS)
def test_each_parser_words_its_400_as_before(parse: Any, body: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse(body)
    assert caught.value.field == field
    assert caught.value.message.startswith(f"{field}: {words}"), caught.value.message


def test_a_step_body_takes_the_fields_of_a_record_read_back() -> None:
    at = "2030-01-01T00:00:00Z"
    body = {"started_at": at, "finished_at": at, "name": "x", "run_id": "y", "duration_ms": 3, "status": "failed"}
    step = schemas.parse_step(body, "run", "name")
    assert (step.run_id, step.name, step.status.value, step.attempts) == ("run", "name", "failed", 1)
    for bad, field, words in [
        ({"started_at": at}, "finished_at", "must be an ISO 8601 date-time with a timezone"),
        ({"started_at": "2030-01-01T00:00:00", "finished_at": at}, "started_at", "must have a timezone"),
        ({"started_at": at, "finished_at": at, "attempts": True}, "attempts", "must be a non-negative integer"),
        ({"started_at": at, "finished_at": at, "status": None}, "status", "must be one of succeeded, failed"),
    ]:
        with pytest.raises(ValidationError, match=f"^{field}: {words}"):
            schemas.parse_step(bad, "run", "name")
