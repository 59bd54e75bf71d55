"""The fake Anthropic Messages API answers and refuses as the real one does (its first checks,
the event order of a stream, tool_use input in pieces); Claude Code itself is the end-to-end
check (test_claude_code.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.fakes.anthropic_api import FakeAnthropicAPI, Reply, say, text, tool_use, use

HEADERS = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
TOOLS = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]


def request(**over: Any) -> dict[str, Any]:
    return {"model": "claude-x", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]} | over


def events(raw: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for chunk in raw.strip().split("\n\n"):
        name, data = chunk.split("\n")
        out.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return out


async def test_a_stream_has_the_real_order_and_tool_input_in_pieces(aiohttp_client: Callable[..., Any]) -> None:
    command = {"command": "echo a-long-enough-command-to-be-cut-in-pieces"}
    api = FakeAnthropicAPI([Reply([text("Running it."), tool_use("Bash", command, id="toolu_01x")])])
    client = await aiohttp_client(api.app)
    resp = await client.post("/v1/messages", json=request(stream=True, tools=TOOLS), headers=HEADERS)
    assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/event-stream")
    stream = events(await resp.text())
    names = [n for n, _ in stream]
    assert names[:2] == ["message_start", "ping"] and names[-2:] == ["message_delta", "message_stop"]
    assert stream[-2][1]["delta"]["stop_reason"] == "tool_use"
    pieces = [d["delta"]["partial_json"] for n, d in stream if n == "content_block_delta" and d["index"] == 1]
    assert len(pieces) > 1 and json.loads("".join(pieces)) == command
    start = next(d for n, d in stream if n == "content_block_start" and d["index"] == 1)
    assert start["content_block"] == {"type": "tool_use", "id": "toolu_01x", "name": "Bash", "input": {}}


async def test_agent_turns_follow_the_script_and_side_requests_do_not(aiohttp_client: Callable[..., Any]) -> None:
    api = FakeAnthropicAPI([use("Bash", {"command": "ls"}), lambda r: say(f"{len(r.tool_results())} results")])
    client = await aiohttp_client(api.app)

    async def ask(**over: Any) -> dict[str, Any]:
        return dict(await (await client.post("/v1/messages", json=request(**over), headers=HEADERS)).json())

    side = await ask()
    first = await ask(tools=TOOLS)
    tool_id = first["content"][0]["id"]
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "a b"}]}
    second = await ask(tools=TOOLS, messages=[result])
    third = await ask(tools=TOOLS)
    assert side["content"] == [text("ok")] and side["stop_reason"] == "end_turn"
    assert first["stop_reason"] == "tool_use" and tool_id.startswith("toolu_01")
    assert second["content"] == [text("1 results")]
    assert api.agent_requests[1].tool_results() == {tool_id: {"content": "a b", "is_error": False}}
    assert "no more turns" in third["content"][0]["text"] and api.overruns == 1


async def test_it_refuses_what_the_real_api_refuses(aiohttp_client: Callable[..., Any]) -> None:
    api = FakeAnthropicAPI([use("Write", {"path": "x"})])
    client = await aiohttp_client(api.app)
    no_key = await client.post("/v1/messages", json=request(), headers={"anthropic-version": "2023-06-01"})
    no_version = await client.post("/v1/messages", json=request(), headers={"x-api-key": "k"})
    no_max = await client.post("/v1/messages", json={"model": "m", "messages": [{"role": "user"}]}, headers=HEADERS)
    unknown_tool = await client.post("/v1/messages", json=request(tools=TOOLS), headers=HEADERS)
    assert (no_key.status, (await no_key.json())["error"]["type"]) == (401, "authentication_error")
    assert no_version.status == 400 and "anthropic-version" in (await no_version.json())["error"]["message"]
    assert no_max.status == 400 and "max_tokens" in (await no_max.json())["error"]["message"]
    assert unknown_tool.status == 500 and api.errors == ["the script used 'Write', which the request does not offer"]
    assert (await client.post("/v1/messages/count_tokens", json=request(), headers=HEADERS)).status == 200
