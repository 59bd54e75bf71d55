"""The one I/O class: slack_sdk's AsyncWebClient on ONE shared aiohttp session.

Implements `gateway.delivery.channels.Channel` on the runtime's shared client session. Failures
become `DeliveryError` (see `errors.py`); the client's own retry handlers are off, so a
`chat.postMessage` is never re-sent behind the outbox's back (the outbox decides, and waits
exactly `Retry-After`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Sequence
from typing import Any

import aiohttp
from aiohttp import web
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from adapters.slack import once, render
from adapters.slack.errors import SlackCallError, classify, network_error
from adapters.slack.parse import make_ref
from adapters.slack.socket import SocketMode
from adapters.slack.spec import SlackSettings
from adapters.slack.teams import Workspaces
from adapters.slack.webhook import PATH, InteractionHandler
from gateway.core import rounds
from gateway.core.models import Approval
from gateway.plugin import Attempt, ChannelContext, OutgoingCard, web_card_ref

log = logging.getLogger("adapters.slack")
TIMEOUT_SECONDS = 10


def split_ref(ref: str) -> tuple[str, str]:
    """'C123:1700000000.000100' -> ('C123', '1700000000.000100')."""
    channel, _, ts = ref.partition(":")
    return channel, ts


def _header(headers: Any, name: str) -> str | None:
    for key, value in dict(headers or {}).items():
        if str(key).lower() == name.lower():
            return str(value)
    return None


class SlackChannel:
    kind = "slack"
    # An earlier attempt is looked up in the channel's history before posting again (once.py).
    resend_unknown = True
    posts_in_flight: int | None = None

    def __init__(self, ctx: ChannelContext) -> None:
        settings: SlackSettings = ctx.settings
        self._ctx, self._settings, self._signer = ctx, settings, ctx.signer
        self._session: aiohttp.ClientSession | None = None
        self._client: AsyncWebClient | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.workspaces = Workspaces(settings.team_ids, self.call)
        self.webhook = InteractionHandler(ctx, self, settings.signing_secret, self.workspaces)
        self.socket = (
            SocketMode(ctx, self.webhook, settings.app_token, settings.base_url) if settings.app_token else None
        )

    # ---------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        if self._session is None:
            self._session = self._ctx.http()  # shared; every call sets its own timeout
            self._client = AsyncWebClient(
                token=self._settings.bot_token,
                base_url=self._settings.base_url,
                session=self._session,
                timeout=TIMEOUT_SECONDS,
                retry_handlers=[],
            )
        await self.workspaces.pinned()  # learn the workspace now (a failure is logged, and asked again)
        if self.socket is not None:
            await self.socket.start()

    async def close(self) -> None:
        if self.socket is not None:
            await self.socket.close()
        await self.settle()
        self._session = self._client = None  # the runtime closes the shared session

    def routes(self) -> Sequence[web.AbstractRouteDef]:
        """The webhook, unless Socket Mode alone is configured (no signing secret to check)."""
        return [web.post(PATH, self.webhook.handle)] if self._settings.signing_secret else []

    # ---------------------------------------------------------------- Web API
    async def call(
        self, method: str, *, http_verb: str = "POST", params: dict[str, Any] | None = None, **body: Any
    ) -> dict[str, Any]:
        """One Web API call (JSON body, or GET `params`); any failure is a classified DeliveryError."""
        if self._client is None:
            raise RuntimeError("SlackChannel.start() was not called")
        try:
            if http_verb == "GET":
                response = await self._client.api_call(method, http_verb="GET", params=params)
            else:
                response = await self._client.api_call(method, json=body)
        except SlackApiError as exc:
            data = exc.response.data if isinstance(exc.response.data, dict) else {}
            retry_after = _header(exc.response.headers, "Retry-After")
            raise classify(method, exc.response.status_code, data.get("error"), retry_after) from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise network_error(method, exc) from None
        return dict(response.data) if isinstance(response.data, dict) else {}

    async def post_card(self, card: OutgoingCard, attempts: Sequence[Attempt]) -> str:
        approval, target = card.approval, card.target
        if attempts:
            found = await once.find_posted(self.call, target, approval.id, attempts[0].at)
            if found is not None:
                log.warning("slack: card of %s was already posted; adopting it", approval.id)
                return f"{target}:{found}"
        body = {"channel": target, "metadata": once.card_metadata(approval.id), "unfurl_links": False}
        data = await self._send_card("chat.postMessage", card, body)
        return f"{data.get('channel', target)}:{data.get('ts', '')}"

    async def update_card(self, card: OutgoingCard) -> None:
        assert card.ref is not None
        channel, ts = split_ref(card.ref)
        await self._send_card("chat.update", card, {"channel": channel, "ts": ts})

    async def _send_card(self, method: str, card: OutgoingCard, body: dict[str, Any]) -> dict[str, Any]:
        """The full card; if Slack refuses it as too big, a compact one, once. Both attempts are
        on the record: the refusal as a `card_degraded` event, the compact one as the delivery."""
        approval, ref = card.approval, make_ref(self._signer, card.approval.id)
        text, seen = render.card_text(approval), rounds.tag(self._signer, approval)
        try:
            return await self.call(
                method, **body, text=text, blocks=render.card_blocks(approval, ref, seen, self._ctx.decides)
            )
        except SlackCallError as exc:
            if not exc.too_big:
                raise
            log.warning("slack: the card of %s is too big (%s); sending a compact one", approval.id, exc.code)
            await self._ctx.inbound.card_degraded(approval.id, card.address, str(exc))
        blocks = render.compact_blocks(approval, ref, self._page(approval), seen, self._ctx.decides)
        return await self.call(method, **body, text=render.cut(text, 300), blocks=blocks)

    def _page(self, approval: Approval) -> str:
        return f"{self._ctx.public_url}{web_card_ref(approval.id)}" if self._ctx.public_url else ""

    async def send_reminder(self, card: OutgoingCard) -> None:
        """A threaded reply under the card (or a plain message if the card is unknown)."""
        body: dict[str, Any] = {"channel": card.target, "text": render.reminder_text(card.approval)}
        if card.ref:
            body["channel"], body["thread_ts"] = split_ref(card.ref)
        await self.call("chat.postMessage", **body)

    # ---------------------------------------------------------------- after the ack
    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run slow, non-durable work (ephemeral replies, opening a modal) after the ack."""
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self) -> None:
        """Wait for the work spawned so far (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def respond(self, response_url: str, text: str) -> None:
        """An ephemeral reply to the presser only, through the press's `response_url`."""
        if self._session is None or not response_url.startswith(("https://", "http://")):
            log.warning("slack: no usable response_url for an ephemeral reply")
            return
        hook = AsyncWebhookClient(response_url, session=self._session, timeout=TIMEOUT_SECONDS)
        try:
            result = await hook.send(text=text, response_type="ephemeral", replace_original=False)
        except (aiohttp.ClientError, TimeoutError) as exc:
            log.warning("slack: ephemeral reply failed: %s", type(exc).__name__)
            return
        if result.status_code != 200:
            log.warning("slack: ephemeral reply failed: HTTP %s", result.status_code)

    async def open_modal(self, trigger_id: str, view: dict[str, Any], response_url: str) -> None:
        try:
            await self.call("views.open", trigger_id=trigger_id, view=view)
        except Exception as exc:
            log.warning("slack: views.open failed: %s", exc)
            await self.respond(response_url, "Could not open the reason form; please press the button again.")
