"""Slack interactions over Socket Mode: no public URL, the gateway dials out to Slack.

slack_sdk's aiohttp `SocketModeClient` calls `apps.connections.open` with the app-level token,
connects to the WebSocket URL it returns, and reconnects by itself (a `disconnect` message, a
closed socket, missed pings). Each `interactive` envelope goes through the SAME handler as the
webhook (`InteractionHandler.interact`): the ack is sent only after the decision is committed,
and it carries the handler's answer (a modal's errors). An envelope that fails before its
commit is not acked, so Slack shows the presser that nothing happened.

Envelopes are de-duplicated by `envelope_id` in the store, so a redelivery after a lost ack
records nothing twice, on whichever replica it lands: every replica may hold a connection (Slack
sends each envelope to one of the app's open connections), see docs/slack.md. A vote's mark
commits with the vote (`InteractionHandler.interact`): an envelope that died before that commit
is not acked, and its redelivery decides like the first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.parse import BadPayload, read
from gateway.core import jsontext
from gateway.plugin import ChannelContext

if TYPE_CHECKING:
    from adapters.slack.webhook import InteractionHandler

log = logging.getLogger("adapters.slack")
PING_SECONDS = 5.0  # a silent socket is replaced after 4 missed pings (slack_sdk's rule)
DRAIN_SECONDS = 3.0  # at close, how long envelopes being decided may take to be acked


def _client_log() -> logging.Logger:
    """The client's logger: ours, for its connection news at INFO ("A new session … has been
    established", "Reconnecting"), but never at DEBUG, where it writes every message it receives
    whole: an interaction's response_url (whoever holds it may post as the app and replace the
    card for 30 minutes) and the app's verification token, which no log filter recognises."""
    client_log = log.getChild("socket")
    client_log.setLevel(max(logging.INFO, log.getEffectiveLevel()))
    return client_log


class SocketMode:
    def __init__(self, ctx: ChannelContext, handler: InteractionHandler, app_token: str, base_url: str) -> None:
        self._ctx, self._handler = ctx, handler
        self._token, self._base_url = app_token, base_url
        self._client: SocketModeClient | None = None
        self._connecting: asyncio.Task[None] | None = None
        self._busy = 0  # envelopes being decided, not acked yet
        self._idle = asyncio.Event()
        self._idle.set()

    async def start(self) -> None:
        """Connect in the background (slack_sdk retries every few seconds until it is connected):
        the gateway starts anyway, like a channel whose Web API is down."""
        if self._client is not None:
            return
        web = AsyncWebClient(base_url=self._base_url, session=self._ctx.http(), retry_handlers=[])
        client = SocketModeClient(self._token, logger=_client_log(), web_client=web, ping_interval=PING_SECONDS)
        client.socket_mode_request_listeners.append(self.on_request)
        self._client = client
        self._connecting = asyncio.create_task(client.connect())  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        if self._client is None:
            return
        client, self._client = self._client, None
        # Let envelopes being decided commit and be acked before the socket goes: an envelope
        # cut short here is not acked, and Slack shows its presser a warning.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), DRAIN_SECONDS)
        await client.close()  # type: ignore[no-untyped-call]  # closed: a connect still retrying gives up
        if self._connecting is not None:
            self._connecting.cancel()
            await asyncio.gather(self._connecting, return_exceptions=True)

    async def connected(self) -> bool:
        return self._client is not None and await self._client.is_connected()

    async def on_request(self, client: AsyncBaseSocketModeClient, req: SocketModeRequest) -> None:
        self._busy += 1
        self._idle.clear()
        try:
            response = await self.answer(req)
            if response is not None:
                await client.send_socket_mode_response(response)
        finally:
            self._busy -= 1
            if not self._busy:
                self._idle.set()

    async def answer(self, req: SocketModeRequest) -> SocketModeResponse | None:
        """The ack, with the handler's answer as its payload; None to send no ack at all."""
        ack = SocketModeResponse(req.envelope_id)
        if req.type != "interactive":  # events or commands the manifest does not subscribe to
            return ack
        try:
            interaction = read(jsontext.check(req.payload, "payload"), self._ctx.signer)
        except (BadPayload, jsontext.LoneSurrogate) as exc:  # acked: the same envelope would fail the same way
            log.warning("slack: unreadable interaction: %s", exc)
            return ack
        try:
            body = await self._handler.interact(interaction, marks=(f"slack:envelope:{req.envelope_id}",))
        except Exception:  # not committed: no ack, so the presser sees that it did not work
            log.exception("slack: an interaction failed before its commit; not acked")
            return None
        return SocketModeResponse(req.envelope_id, payload=body)
