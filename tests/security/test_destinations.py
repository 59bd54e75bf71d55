"""Cards go only to the destinations the operator opened.

Finding covered (it failed on main before the fix):
- "Any agent can make the gateway mail anyone": `channels: ["email:victim@elsewhere.example"]`
  with the title "Your account is locked: click to verify" was sent, from the approval address;
  the same for any Telegram chat or Slack channel the bot is in. Now a target that
  `telegram.chats`, `slack.channels`, `email.approvers` or `email.recipients` does not list is a
  `400 destination_not_allowed` naming the channel, nothing is stored and nothing is sent; so is
  an inline policy's `escalate_to`. A `NAME:target` entry opens a destination to agent NAME only.
  Operators, and a configured policy's own `escalate_to`, are trusted.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from tests.fakes.smtp import Inbox
from tests.security.channel_support import fakes
from tests.security.conftest import ALICE, BILLING, MAIL, Launch, call, db_counts, suspend_body

pytestmark = pytest.mark.subprocess
OPEN_CHAT, BILLING_CHAT, CLOSED_CHAT = -1001, -1002, -1003
VICTIM = "victim@elsewhere.example"


@pytest.fixture
async def inbox() -> AsyncIterator[Inbox]:
    box = await Inbox().start()
    yield box
    await box.stop()


def _extra(telegram_url: str, slack_url: str, smtp_port: int) -> str:
    return f"""
[telegram]
bot_token = "123456:TEST-token_abc"
base_url = "{telegram_url}"
approvers = [111]
chats = [{OPEN_CHAT}, "billing:{BILLING_CHAT}"]

[slack]
bot_token = "xoxb-test-token"
signing_secret = "test-signing-secret-0123456789"
base_url = "{slack_url}"
approvers = ["U111"]
channels = ["C0OPEN"]

[email]
host = "127.0.0.1"
port = {smtp_port}
from = "approvals@example.org"
starttls = false
approvers = ["alice@example.org"]
recipients = ["billing:cfo@example.org"]

[policies.oncall]
timeout = "1h"
on_timeout = "escalate"
escalate_to = ["telegram:{CLOSED_CHAT}"]
"""


async def test_an_agent_sends_cards_only_where_the_operator_opened(launch: Launch, inbox: Inbox) -> None:
    async with fakes() as (telegram, slack):
        gw = await asyncio.to_thread(
            launch, extra=_extra(telegram.base_url, slack.base_url, inbox.port), web='approvers = ["alice"]'
        )
        async with aiohttp.ClientSession() as http:
            refused = [
                (MAIL, f"email:{VICTIM}", {"title": "Your account is locked: click to verify"}),
                (MAIL, f"telegram:{CLOSED_CHAT}", {}),
                (MAIL, "slack:C0ELSEWHERE", {}),
                (MAIL, f"telegram:{BILLING_CHAT}", {}),  # open to agent:billing only
                (MAIL, "email:cfo@example.org", {}),  # open to agent:billing only
            ]
            before = db_counts(gw)
            for i, (key, channel, over) in enumerate(refused):
                body = suspend_body(f"run-{i}", channels=["web", channel], **over)
                status, reply = await call(http, "POST", f"{gw.url}/v1/suspend", json=body, headers=key)
                assert status == 400, (channel, reply)
                assert reply["error"]["code"] == "destination_not_allowed"
                assert reply["error"]["message"].startswith("channels:") and channel in reply["error"]["message"]
                assert reply["error"]["details"]["channel"] == channel
            # an inline policy escalating to a closed chat is refused too
            inline = {"timeout": "1h", "on_timeout": "escalate", "escalate_to": [f"telegram:{CLOSED_CHAT}"]}
            body = suspend_body("run-inline", channels=["web"], policy=inline)
            status, reply = await call(http, "POST", f"{gw.url}/v1/suspend", json=body, headers=MAIL)
            assert (status, reply["error"]["code"]) == (400, "destination_not_allowed"), reply
            assert reply["error"]["message"].startswith("policy.escalate_to:")
            assert db_counts(gw) == before  # nothing stored, nothing queued
            await asyncio.sleep(0.3)
            assert inbox.to(VICTIM) == [] and telegram.calls_to("sendMessage") == []

            opened = [
                (MAIL, f"telegram:{OPEN_CHAT}"),
                (MAIL, "slack:C0OPEN"),
                (MAIL, "email:alice@example.org"),
                (BILLING, f"telegram:{BILLING_CHAT}"),
                (BILLING, "email:cfo@example.org"),
                (ALICE, f"email:{VICTIM}"),  # an operator is trusted
            ]
            for i, (key, channel) in enumerate(opened):
                body = suspend_body(f"ok-{i}", channels=["web", channel])
                status, reply = await call(http, "POST", f"{gw.url}/v1/suspend", json=body, headers=key)
                assert status == 201, (channel, reply)
            # a configured policy's own escalate_to is the operator's: trusted
            body = suspend_body("ok-policy", channels=["web"], policy="oncall")
            status, reply = await call(http, "POST", f"{gw.url}/v1/suspend", json=body, headers=MAIL)
            assert status == 201, reply


async def test_a_bad_destination_stops_the_start(launch: Launch, tmp_path: Path) -> None:
    extra = '[telegram]\nbot_token = "123456:TEST-token_abc"\nchats = ["not a chat"]\n'
    with pytest.raises(RuntimeError, match=r"telegram\.chats\[0\]"):
        await asyncio.to_thread(launch, extra=extra)


async def test_with_no_destination_listed_an_agent_sends_nowhere_but_the_web(launch: Launch, inbox: Inbox) -> None:
    """The finding as it was reproduced: no destination keys at all, so nothing is open."""
    async with fakes() as (telegram, slack):
        extra = (
            f'[telegram]\nbot_token = "123456:TEST-token_abc"\nbase_url = "{telegram.base_url}"\napprovers = [111]\n'
            f'[slack]\nbot_token = "xoxb-test-token"\nsigning_secret = "test-signing-secret-0123456789"\n'
            f'base_url = "{slack.base_url}"\napprovers = ["U111"]\n'
            f'[email]\nhost = "127.0.0.1"\nport = {inbox.port}\nfrom = "approvals@example.org"\nstarttls = false\n'
            'approvers = ["alice@example.org"]\n'
        )
        gw = await asyncio.to_thread(launch, extra=extra, web='approvers = ["alice"]')
        async with aiohttp.ClientSession() as http:
            before = db_counts(gw)
            for i, channel in enumerate([f"email:{VICTIM}", f"telegram:{CLOSED_CHAT}", "slack:C0ANY"]):
                body = suspend_body(f"run-{i}", channels=[channel], title="Your account is locked: click to verify")
                status, reply = await call(http, "POST", f"{gw.url}/v1/suspend", json=body, headers=MAIL)
                assert status == 400, (channel, reply)  # on the old code: 201, and the mail went out
                assert reply["error"]["code"] == "destination_not_allowed"
            assert db_counts(gw) == before
            await asyncio.sleep(0.3)
            assert inbox.to(VICTIM) == [] and telegram.calls_to("sendMessage") == []
            assert slack.calls_to("chat.postMessage") == []
