"""Approvers named by an agent only narrow the operator's; they never add anyone.

Findings covered (each failed on main before the fix):
- "Where a channel's `approvers` list is empty, the agent picks its own approver": with
  `telegram.approvers = []` an agent suspended with `approvers: ["telegram:424242"]` and approved
  by pressing as 424242; the same on e-mail with its own address. Now such a suspend is a 400
  naming `approvers` and stores nothing; a press by someone no allowlist lists is denied; the
  channel's cards carry no buttons; the gateway warns at start, naming `telegram.approvers`.
- `[people]` stays a way for the operator to name who decides on a channel without an allowlist.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.core.models import Outcome
from gateway.http.web.auth import hash_password
from tests.procs import AUTH
from tests.security.channel_support import CHAT, PASSWORD, Config, Stack, stack_of, telegram_section, web_section

pytestmark = pytest.mark.subprocess
SELF = 424242  # the agent's own Telegram account
INFO_ONLY = "nobody decides on this channel"  # what such a card says instead of buttons
# e-mail with no approvers; the agent's own address is an open destination (for information)
EMAIL = (
    '[email]\nhost = "127.0.0.1"\nport = 9\nfrom = "hitl@example.org"\nstarttls = false\n'
    'recipients = ["agent@evil.example"]\n'
)


def _config(extra: str = "") -> Config:
    digest = hash_password(PASSWORD, n=2**10)
    return lambda telegram, slack: web_section(["alice"], digest) + telegram_section(telegram, []) + EMAIL + extra


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    async for s in stack_of(tmp_path, _config()):
        yield s


@pytest.fixture
async def people(tmp_path: Path) -> AsyncIterator[Stack]:
    """Still no telegram.approvers, but [people.alice] names her Telegram account."""
    async for s in stack_of(tmp_path, _config('[people.alice]\nweb = "alice"\ntelegram = 111\n')):
        yield s


async def _count(stack: Stack) -> int:
    async with stack.http.get(f"{stack.url}/v1/approvals", headers=AUTH) as resp:
        return len((await resp.json())["items"])


@pytest.mark.parametrize(
    ("channels", "approvers"),
    [
        ([f"telegram:{CHAT}"], [f"telegram:{SELF}"]),
        ([f"telegram:{CHAT}", "web"], [f"telegram:{SELF}"]),
        (["email:agent@evil.example"], ["email:agent@evil.example"]),
        (["web"], ["web:mallory"]),  # a web name nobody configured
    ],
)
async def test_an_agent_cannot_name_itself_where_no_allowlist_lists_it(
    stack: Stack, channels: list[str], approvers: list[str]
) -> None:
    before = await _count(stack)
    status, body = await stack.suspend(channels=channels, approvers=approvers)
    assert status == 400, body
    assert body["error"]["code"] == "validation_error"
    assert body["error"]["message"].startswith("approvers:"), body
    assert await _count(stack) == before  # nothing stored


async def test_a_press_on_a_channel_without_an_allowlist_decides_nothing(stack: Stack) -> None:
    status, body = await stack.suspend(channels=[f"telegram:{CHAT}", "web"])  # names nobody: allowlists decide
    assert status == 201, body
    mid = await stack.card(body["id"])
    card = stack.telegram.message(CHAT, mid)
    assert INFO_ONLY in card["text"] and not card.get("reply_markup")  # no buttons, and it says why
    press = stack.press(SELF, body["id"], Outcome.APPROVE, mid, "agent")
    assert await stack.send(press) == 200
    assert stack.answer(press) == "Not authorised"
    assert (await stack.approval(body["id"]))["status"] == "waiting_approval"
    # the operator was told at start, once, naming the key
    log = stack.gw.log.read_text()
    warnings = [line for line in log.splitlines() if "telegram.approvers" in line and "WARNING" in line]
    assert len(warnings) == 1, log[-3000:]
    assert "email.approvers" in warnings[0]


async def test_people_name_who_decides_on_a_channel_without_an_allowlist(people: Stack) -> None:
    stack = people
    status, body = await stack.suspend(channels=[f"telegram:{CHAT}"], approvers=[f"telegram:{SELF}"])
    assert status == 400, body  # still nobody the operator named
    status, body = await stack.suspend(channels=[f"telegram:{CHAT}"], approvers=["web:alice"])
    assert status == 201, body
    mid = await stack.card(body["id"])
    assert stack.telegram.message(CHAT, mid).get("reply_markup")  # someone may decide here: buttons
    stranger = stack.press(SELF, body["id"], Outcome.APPROVE, mid, "agent")
    assert await stack.send(stranger) == 200 and stack.answer(stranger) == "Not authorised"
    alice = stack.press(111, body["id"], Outcome.APPROVE, mid, "alice")
    assert await stack.send(alice) == 200 and stack.answer(alice) == "Approved"
    view = await stack.approval(body["id"])
    assert view["status"] == "approved" and view["decision"]["decided_by"] == "telegram:111"
    assert json.dumps(view["decision"]).count("424242") == 0
