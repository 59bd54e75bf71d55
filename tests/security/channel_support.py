"""Shared helpers for the attacks on identities and presses (tests/security/test_identities.py,
test_presses.py, test_chat_text.py): a real `hitl-gateway serve` subprocess wired to the fake
Telegram and Slack APIs, which run in the test's own event loop, and the ways a person presses."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from adapters.slack.parse import make_ref
from adapters.telegram import callback
from gateway.core.models import Outcome
from gateway.core.tokens import TokenSigner
from gateway.testing import TEST_SECRET
from tests.fakes.slack_api import BOT_TOKEN, SIGNING_SECRET, FakeSlack, block_actions, signed
from tests.fakes.telegram_api import FakeTelegramAPI, callback_update
from tests.procs import AUTH, Gateway, free_port, wait_ready, write_config

TOKEN = "123456:TEST-token_abc"
HOOK_SECRET = "hook_secret-0123456789"
CHAT = -1001234567890
SLACK_CHANNEL = "C0CARDS"
SIGNER = TokenSigner([TEST_SECRET])
PASSWORD = "correct horse battery"
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def telegram_section(api: FakeTelegramAPI, approvers: list[int]) -> str:
    return (
        f'[telegram]\nbot_token = "{TOKEN}"\nwebhook_secret = "{HOOK_SECRET}"\n'
        f'base_url = "{api.base_url}"\napprovers = {approvers}\nchats = [{CHAT}]\n'
    )


def slack_section(fake: FakeSlack, approvers: list[str]) -> str:
    return (
        f'[slack]\nbot_token = "{BOT_TOKEN}"\nsigning_secret = "{SIGNING_SECRET}"\n'
        f'base_url = "{fake.base_url}"\napprovers = {json.dumps(approvers)}\nchannels = ["{SLACK_CHANNEL}"]\n'
    )


def web_section(approvers: list[str], password_hash: str) -> str:
    passwords = ", ".join(f'{name} = "{password_hash}"' for name in approvers)
    return f"[web]\napprovers = {json.dumps(approvers)}\npasswords = {{ {passwords} }}\n"


@dataclass
class Stack:
    """One gateway process, the fakes it talks to, and an HTTP session (with a cookie jar)."""

    gw: Gateway
    http: aiohttp.ClientSession
    telegram: FakeTelegramAPI
    slack: FakeSlack
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(70_000))

    @property
    def url(self) -> str:
        return self.gw.url

    async def suspend(self, **body: Any) -> tuple[int, dict[str, Any]]:
        base = {"run_id": f"run-{next(self._ids)}", "step": "pay", "title": "Pay", "channels": ["web"]}
        async with self.http.post(f"{self.url}/v1/suspend", json=base | body, headers=AUTH) as resp:
            return resp.status, await resp.json()

    async def approval(self, approval_id: str) -> dict[str, Any]:
        async with self.http.get(f"{self.url}/v1/approvals/{approval_id}", headers=AUTH) as resp:
            assert resp.status == 200, await resp.text()
            data: dict[str, Any] = await resp.json()
            return data

    async def events(self, approval_id: str) -> list[dict[str, Any]]:
        async with self.http.get(f"{self.url}/v1/approvals/{approval_id}/events", headers=AUTH) as resp:
            items: list[dict[str, Any]] = (await resp.json())["items"]
            return items

    # ---------------------------------------------------------------- Telegram
    async def card(self, approval_id: str, within: float = 10.0) -> int:
        """The message id of the approval's Telegram card, once the gateway posted it."""
        async with asyncio.timeout(within):
            while True:
                for (_, message_id), msg in list(self.telegram.messages.items()):
                    if approval_id in msg.get("text", ""):
                        return message_id
                await asyncio.sleep(0.01)

    def press(
        self, user_id: int, approval_id: str, outcome: Outcome, message_id: int, username: str = ""
    ) -> dict[str, Any]:
        """A press on a real button: callback_data signed like the gateway's own."""
        user: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": f"U{user_id}"}
        if username:
            user["username"] = username
        data = callback.build(SIGNER, approval_id, outcome)
        n = next(self._ids)
        return callback_update(n, f"q{n}", user, CHAT, message_id, data)

    async def send(self, update: dict[str, Any]) -> int:
        headers = {"X-Telegram-Bot-Api-Secret-Token": HOOK_SECRET}
        async with self.http.post(f"{self.url}/webhooks/telegram", data=json.dumps(update), headers=headers) as resp:
            if resp.status == 200:  # Telegram runs the method the 200 carries (the press's answer)
                await self.telegram.apply_webhook_reply(await resp.json(), update)
                assert not self.telegram.bad_replies, self.telegram.bad_replies
            return resp.status

    def answer(self, update: dict[str, Any]) -> str | None:
        """The answer the presser saw (Telegram refuses a second answer to one press)."""
        query = update["callback_query"]["id"]
        answers = [c for c in self.telegram.calls_to("answerCallbackQuery") if c.error is None]
        return next((c.params.get("text") for c in answers if c.params.get("callback_query_id") == query), None)

    # ---------------------------------------------------------------- Slack
    async def slack_press(self, user: str, verb: str, approval_id: str) -> int:
        ref = make_ref(SIGNER, approval_id)
        payload = block_actions(user, f"hitl:{verb}:{ref}", ref, response_url=self.slack.response_url(user))
        body, headers = signed(payload, time.time())
        async with self.http.post(f"{self.url}/webhooks/slack/interactions", data=body, headers=headers) as resp:
            return resp.status

    # ---------------------------------------------------------------- the web inbox
    async def sign_in(self, name: str) -> None:
        async with self.http.get(f"{self.url}/login") as page:
            token = _CSRF.search(await page.text())
        assert token is not None
        form = {"csrf": token.group(1), "name": name, "password": PASSWORD}
        async with self.http.post(f"{self.url}/login", data=form, allow_redirects=False) as resp:
            assert resp.status in (302, 303), await resp.text()

    async def web_decide(self, approval_id: str, outcome: str = "approve") -> int:
        async with self.http.get(f"{self.url}/approvals/{approval_id}") as page:
            token = _CSRF.search(await page.text())
        form = {"csrf": token.group(1) if token else "", "outcome": outcome, "comment": "ok"}
        async with self.http.post(
            f"{self.url}/approvals/{approval_id}/decision", data=form, allow_redirects=False
        ) as resp:
            return resp.status


async def until(done: Callable[[], bool], within: float = 10.0) -> None:
    """Poll `done` (a fake's record of calls) until it holds."""
    async with asyncio.timeout(within):
        while True:
            if done():
                return
            await asyncio.sleep(0.01)


async def serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, f"http://127.0.0.1:{port}"


@asynccontextmanager
async def running(tmp_path: Path, config: str, *, telegram: FakeTelegramAPI, slack: FakeSlack) -> AsyncIterator[Stack]:
    """The gateway on a fresh SQLite file with `config` (after [server], [store], [security])."""
    port = free_port()
    path = write_config(tmp_path / "gw.toml", f"sqlite:///{tmp_path / 'gw.db'}", port, config)
    gw = Gateway(path, port, tmp_path / "gw.log")
    await asyncio.to_thread(gw.start)  # off the loop: the fakes answer its start-up calls meanwhile
    try:
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            await wait_ready(http, gw.url, lambda: gw.proc is not None and gw.proc.poll() is None, log=gw.log)
            yield Stack(gw, http, telegram, slack)
    finally:
        gw.stop()


Config = Callable[[FakeTelegramAPI, FakeSlack], str]


async def stack_of(tmp_path: Path, config: Config) -> AsyncIterator[Stack]:
    """For a fixture: the fakes, then the gateway with `config(telegram, slack)`."""
    async with (
        fakes() as (telegram, slack),
        running(tmp_path, config(telegram, slack), telegram=telegram, slack=slack) as s,
    ):
        yield s


@asynccontextmanager
async def fakes() -> AsyncIterator[tuple[FakeTelegramAPI, FakeSlack]]:
    """The fake Telegram Bot API and Slack Web API, listening on loopback."""
    telegram = FakeTelegramAPI(TOKEN)
    runner, url = await serve(telegram.app)
    telegram.base_url = f"{url}/bot"
    slack = FakeSlack()
    await slack.start()
    try:
        yield telegram, slack
    finally:
        await slack.stop()
        await runner.cleanup()
