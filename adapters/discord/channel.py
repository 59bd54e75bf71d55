"""The one I/O class: Discord's HTTP API on the runtime's shared aiohttp session.

Cards are bot messages (`POST /channels/{id}/messages`, edited with `PATCH …/messages/{id}`),
posted with the approval id as an enforced `nonce`: a post sent again after an unknown outcome
returns the message already made instead of a second card. Failures become `DeliveryError`
(errors.py): a 429 waits exactly the `retry_after` Discord gives, through the outbox's retry.
After an interaction's answer, the card is edited and the presser told through the
interaction's webhook (no bot token: the interaction's own token, valid 15 minutes).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Sequence
from typing import Any

import aiohttp
from aiohttp import web

from adapters.discord import render
from adapters.discord.errors import UNKNOWN_MESSAGE, DiscordCallError, classify, network_error
from adapters.discord.parse import make_ref
from adapters.discord.spec import DiscordSettings
from adapters.discord.webhook import EPHEMERAL, PATH, DiscordInteractions
from gateway.core import rounds
from gateway.core.models import Approval
from gateway.plugin import Attempt, ChannelBase, ChannelContext, OutgoingCard

log = logging.getLogger("adapters.discord")
TIMEOUT_SECONDS = 10
USER_AGENT = "DiscordBot (https://github.com/hitl-gateway, 1)"


def split_ref(ref: str) -> tuple[str, str]:
    """'<channel id>:<message id>' -> its two ids."""
    channel, _, message = ref.partition(":")
    return channel, message


async def _json(resp: aiohttp.ClientResponse) -> Any:
    """The answer's JSON; None for an empty or non-JSON one (a proxy's 502 page)."""
    text = await resp.text()
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


class DiscordChannel(ChannelBase):
    kind = "discord"
    resend_unknown = True  # the enforced nonce makes a second post return the first

    def __init__(self, ctx: ChannelContext) -> None:
        settings: DiscordSettings = ctx.settings
        self._ctx, self._settings = ctx, settings
        self._base = settings.base_url.rstrip("/")
        self._session: aiohttp.ClientSession | None = None
        self._tasks: set[asyncio.Future[None]] = set()
        self.webhook = DiscordInteractions(ctx, self, settings.public_key, settings.guild_ids)

    async def start(self) -> None:
        if self._session is None:
            self._session = self._ctx.http()  # shared; every call sets its own timeout

    async def close(self) -> None:
        await self.settle()
        self._session = None  # the runtime closes the shared session

    def routes(self) -> Sequence[web.AbstractRouteDef]:
        return [web.post(PATH, self.webhook.handle)]

    # ---------------------------------------------------------------- the HTTP API
    async def call(self, verb: str, path: str, body: dict[str, Any] | None = None, *, bot: bool = True) -> Any:
        """One API call; any failure is a classified DeliveryError. The interaction webhook's
        calls (`bot=False`) are authorised by the token in their path."""
        if self._session is None:
            raise RuntimeError("DiscordChannel.start() was not called")
        what = f"{verb} {path.split('/')[1] if '/' in path else path}"
        headers = {"User-Agent": USER_AGENT}
        if bot:
            headers["Authorization"] = f"Bot {self._settings.bot_token}"
        timeout = aiohttp.ClientTimeout(total=TIMEOUT_SECONDS)
        try:
            async with self._session.request(
                verb, self._base + path, json=body, headers=headers, timeout=timeout
            ) as resp:
                data = await _json(resp)
                if resp.status >= 400:
                    raise classify(what, resp.status, data, resp.headers.get("Retry-After"))
                return data
        except DiscordCallError:
            raise
        except aiohttp.ClientConnectorError as exc:
            raise network_error(what, exc, connected=False) from None
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise network_error(what, exc, connected=True) from None

    def card(self, approval: Approval) -> dict[str, Any]:
        """The card's message as it should look now."""
        ref, seen = make_ref(self._ctx.signer, approval.id), rounds.tag(self._ctx.signer, approval)
        return render.card(approval, ref, seen, self._ctx.decides)

    async def post_card(self, card: OutgoingCard, attempts: Sequence[Attempt]) -> str:
        body = {**self.card(card.approval), "nonce": card.approval.id, "enforce_nonce": True}
        data = await self.call("POST", f"/channels/{card.target}/messages", body)
        message = data.get("id") if isinstance(data, dict) else None
        if not isinstance(message, str) or not message:
            raise DiscordCallError("discord POST channels: no message id in the answer", None, transient=False)
        return f"{data.get('channel_id') or card.target}:{message}"

    async def update_card(self, card: OutgoingCard) -> None:
        assert card.ref is not None
        channel, message = split_ref(card.ref)
        await self.call("PATCH", f"/channels/{channel}/messages/{message}", self.card(card.approval))

    async def send_reminder(self, card: OutgoingCard) -> None:
        """A reply to the card (or a plain message if the card is unknown or gone)."""
        body: dict[str, Any] = {"content": render.reminder(card.approval), "allowed_mentions": render.NO_MENTIONS}
        channel = card.target
        if card.ref:
            channel, message = split_ref(card.ref)
            body["message_reference"] = {"message_id": message, "fail_if_not_exists": False}
        await self.call("POST", f"/channels/{channel}/messages", body)

    # ---------------------------------------------------------------- after an answer
    def spawn(self, work: Awaitable[None]) -> None:
        """Run the follow-ups of an interaction after its answer (not durable: the outbox's
        sync of the card is)."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self) -> None:
        """Wait for the follow-ups spawned so far (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def _hook(self, token: str) -> str:
        return f"/webhooks/{self._settings.application_id}/{token}"

    async def edit_original(self, token: str, message: dict[str, Any]) -> None:
        try:
            await self.call("PATCH", self._hook(token) + "/messages/@original", message, bot=False)
        except DiscordCallError as exc:
            if exc.code != UNKNOWN_MESSAGE:
                log.warning("discord: the pressed card was not edited (%s); the outbox syncs it", exc)
        except Exception as exc:
            log.warning("discord: the pressed card was not edited (%s); the outbox syncs it", exc)

    async def follow_up(self, token: str, text: str) -> None:
        """An ephemeral message to the presser only."""
        body = {
            "content": render.cut(text, render.CONTENT_MAX),
            "flags": EPHEMERAL,
            "allowed_mentions": render.NO_MENTIONS,
        }
        try:
            await self.call("POST", self._hook(token), body, bot=False)
        except Exception as exc:
            log.warning("discord: the follow-up message failed: %s", exc)
