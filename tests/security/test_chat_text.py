"""What the chat platforms show cannot be hijacked by an agent's text, and names the person
(issue 13, "rendering").

Findings covered (each failed on main before the fix):
- "Slack's top-level `text` is not escaped": `<!channel>` and `<https://evil|click>` in a title
  reached phones' notifications. The fallback `text` is now escaped like the blocks (&, <, >).
- "Decided cards name the person, not a raw id": the fallback text said `by slack:UBOB`; it now
  mentions the member (Slack shows the name). With `[people.Alice] slack = "UALICE"`, the cards
  on Slack (text and blocks) and on Telegram, and the audit, say Alice.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.security.channel_support import (
    CHAT,
    SLACK_CHANNEL,
    Config,
    Stack,
    slack_section,
    stack_of,
    telegram_section,
    until,
)

pytestmark = pytest.mark.subprocess
HOSTILE = "<!channel> <https://evil.example|click> & <@U0ADMIN>"
RAW = ("<!channel>", "<https://evil", "<@U0ADMIN>", "& <")


def _config(extra: str) -> Config:
    return lambda telegram, slack: slack_section(slack, ["UALICE", "UBOB"]) + telegram_section(telegram, [111]) + extra


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    async for s in stack_of(tmp_path, _config("")):
        yield s


@pytest.fixture
async def people(tmp_path: Path) -> AsyncIterator[Stack]:
    async for s in stack_of(tmp_path, _config('[people.Alice]\nslack = "UALICE"\ntelegram = 111\n')):
        yield s


def _mrkdwn(value: Any) -> Iterator[str]:
    """Every text Slack parses as mrkdwn in a message body (plain_text is shown as it is)."""
    if isinstance(value, dict):
        if value.get("type") == "mrkdwn" and isinstance(value.get("text"), str):
            yield value["text"]
        for item in value.values():
            yield from _mrkdwn(item)
    elif isinstance(value, list):
        for item in value:
            yield from _mrkdwn(item)


async def _call(stack: Stack, method: str, n: int) -> dict[str, Any]:
    await until(lambda: len(stack.slack.calls_to(method, ok_only=True)) >= n)
    return stack.slack.calls_to(method, ok_only=True)[n - 1]


def _assert_escaped(body: dict[str, Any]) -> None:
    blocks = body["blocks"] if isinstance(body["blocks"], list) else json.loads(body["blocks"])
    for text in (body["text"], *_mrkdwn(blocks)):
        assert not any(raw in text for raw in RAW), text


async def _hostile_card(stack: Stack) -> str:
    channels = [f"slack:{SLACK_CHANNEL}", f"telegram:{CHAT}"]
    status, body = await stack.suspend(title=HOSTILE, summary=f"summary {HOSTILE}", channels=channels)
    assert status == 201, body
    return str(body["id"])


async def test_slack_text_is_escaped_like_the_blocks(stack: Stack) -> None:
    approval_id = await _hostile_card(stack)
    posted = await _call(stack, "chat.postMessage", 1)
    assert posted["text"].startswith("Approval needed: &lt;!channel&gt; &lt;https://evil.example|click&gt; &amp;")
    _assert_escaped(posted)
    assert await stack.slack_press("UBOB", "approve", approval_id) == 200
    updated = await _call(stack, "chat.update", 1)
    _assert_escaped(updated)
    assert updated["text"].endswith(": approved (approve) by <@UBOB>")  # our own mention: a name, not an id


async def test_decided_cards_and_the_audit_name_the_person(people: Stack) -> None:
    stack = people
    approval_id = await _hostile_card(stack)
    await _call(stack, "chat.postMessage", 1)
    assert await stack.slack_press("UALICE", "approve", approval_id) == 200
    assert (await stack.approval(approval_id))["decision"]["decided_by"] == "slack:UALICE"
    updated = await _call(stack, "chat.update", 1)
    _assert_escaped(updated)
    assert updated["text"].endswith(": approved (approve) by Alice")
    assert any("*Approved* by Alice" in text for text in _mrkdwn(updated["blocks"]))
    await until(lambda: bool(stack.telegram.calls_to("editMessageText")))
    edit = stack.telegram.calls_to("editMessageText")[-1].params["text"]
    assert "Approved</b> by Alice ·" in edit and "UALICE" not in edit
    events = [e for e in await stack.events(approval_id) if e["kind"] == "approved"]
    assert events[0]["data"] == {"by": "slack:UALICE", "person": "Alice"}
