"""Live web pages: a server-sent-events stream tells each open page that something changed.

One poll per process of the newest event id (an index probe) while at least one page is open,
fanned out to every stream; every change is an event (a decision, a card post or sync, a job's
start and end), whoever made it: this process, another replica, or the CLI. The page then fetches
itself and swaps its live regions (static/live.js). Pages work without JavaScript: they are
server-rendered, and a reload shows the news.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

log = logging.getLogger("gateway.http.live")
POLL = 1.0  # seconds between two looks at the newest event id (only while a page is open)
HEARTBEAT = 15.0  # a comment line this often keeps proxies from closing an idle stream
_CLOSED = -1


class LiveFeed:
    def __init__(
        self, newest: Callable[[], Awaitable[int]], *, poll: float = POLL, heartbeat: float = HEARTBEAT
    ) -> None:
        """`newest`: the newest event id (`Reads.newest_event_id`)."""
        self.newest, self.poll, self.heartbeat = newest, poll, heartbeat
        self._streams: set[asyncio.Queue[int]] = set()
        self._task: asyncio.Task[None] | None = None

    @property
    def open_streams(self) -> int:
        return len(self._streams)

    def subscribe(self) -> asyncio.Queue[int]:
        queue: asyncio.Queue[int] = asyncio.Queue(maxsize=1)
        self._streams.add(queue)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._watch(), name="live-feed")
        return queue

    def unsubscribe(self, queue: asyncio.Queue[int]) -> None:
        self._streams.discard(queue)

    async def _watch(self) -> None:
        last: int | None = None
        while self._streams:
            try:
                newest = await self.newest()
            except Exception as exc:  # a store hiccup: the pages keep what they show
                log.warning("live feed: could not read the newest event id: %s", exc)
            else:
                if last is not None and newest != last:
                    for queue in self._streams:
                        _offer(queue, newest)
                last = newest
            await asyncio.sleep(self.poll)

    async def close(self, app: web.Application | None = None) -> None:
        """On shutdown: end every stream, so that the graceful stop does not wait on them."""
        for queue in self._streams:
            _offer(queue, _CLOSED)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def _offer(queue: asyncio.Queue[int], value: int) -> None:
    """Keep only the newest value: a page that has not read the last change refreshes once."""
    with contextlib.suppress(asyncio.QueueEmpty):
        queue.get_nowait()
    queue.put_nowait(value)


async def stream(
    request: web.Request, feed: LiveFeed, signed_in: Callable[[], Awaitable[bool]] | None = None
) -> web.StreamResponse:
    """The stream of `change` events; with `signed_in`, asked again at each heartbeat: a session
    that has ended since (a logout, a new password, a user removed) ends its streams too."""
    resp = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    )
    await resp.prepare(request)
    queue = feed.subscribe()
    try:
        await resp.write(b"retry: 3000\n\n")
        while True:
            try:
                newest = await asyncio.wait_for(queue.get(), feed.heartbeat)
            except TimeoutError:
                if signed_in is not None and not await signed_in():
                    break
                await resp.write(b": keep-alive\n\n")
                continue
            if newest == _CLOSED:
                break
            await resp.write(f"event: change\ndata: {newest}\n\n".encode())
    except (ConnectionResetError, ConnectionError):
        pass  # the page went away
    finally:
        feed.unsubscribe(queue)
    return resp
