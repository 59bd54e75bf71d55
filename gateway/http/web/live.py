"""Live web pages: a server-sent-events stream tells each open page that something changed.

One poll per process of the newest event id (an index probe) while at least one page is open,
fanned out to every stream; every change is an event (a decision, a card post or sync, a job's
start and end), whoever made it: this process, another replica, or the CLI. The page then fetches
itself and swaps its live regions (static/live.js). Pages work without JavaScript: they are
server-rendered, and a reload shows the news.

Each stream costs a queue, a task and, every heartbeat, a session read: a user holds at most
`[web] live_streams_per_user` of them in a process, and a new one beyond that ends the user's
oldest (see `LiveFeed.subscribe` for why the oldest rather than refusing the new one). The count
is per process, like the sign-in throttle: behind N replicas a user holds at most N times as
many, and each replica bounds what it spends on them.
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
PER_USER = 8  # the default of `[web] live_streams_per_user`
REPLACED = "replaced"  # the last event id of a stream ended for a newer one of the same user
_CLOSED = -1
_REPLACED = -2


class LiveFeed:
    def __init__(
        self,
        newest: Callable[[], Awaitable[int]],
        *,
        poll: float = POLL,
        heartbeat: float = HEARTBEAT,
        per_user: int = PER_USER,
    ) -> None:
        """`newest`: the newest event id (`Reads.newest_event_id`); `per_user`: how many streams
        one user holds at most in this process."""
        self.newest, self.poll, self.heartbeat, self.per_user = newest, poll, heartbeat, per_user
        self._streams: dict[asyncio.Queue[int], str] = {}  # each open stream and its user
        self._by_user: dict[str, list[asyncio.Queue[int]]] = {}  # a user's streams, oldest first
        self._task: asyncio.Task[None] | None = None

    @property
    def open_streams(self) -> int:
        return len(self._streams)

    def streams_of(self, user: str) -> int:
        return len(self._by_user.get(user, ()))

    def subscribe(self, user: str) -> asyncio.Queue[int]:
        """A new stream for `user`; beyond `per_user`, the user's oldest stream ends.

        Ending the oldest rather than refusing the newest (a 429): a stream whose client vanished
        without closing its connection (a laptop put to sleep, a dropped network) is only noticed
        when a write fails, which TCP may take minutes to report. Refused, the user's new pages
        would stay without live refresh until then, and a stolen cookie holding the slots would
        keep them so; ended, such dead streams are the first to go, and the page the user just
        opened is the one that stays live. The ended page is told (`REPLACED`) not to reconnect,
        so that more open pages than the cap take turns at most once, never in a loop."""
        queue: asyncio.Queue[int] = asyncio.Queue(maxsize=1)
        mine = self._by_user.setdefault(user, [])
        while len(mine) >= max(1, self.per_user):
            oldest = mine.pop(0)
            self._streams.pop(oldest, None)  # off the cap and the fan-out now: only the end is left to read
            _offer(oldest, _REPLACED)
        mine.append(queue)
        self._streams[queue] = user
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._watch(), name="live-feed")
        return queue

    def unsubscribe(self, queue: asyncio.Queue[int]) -> None:
        """The stream ended (its page went away, its session ended, it was replaced): its slot is free."""
        user = self._streams.pop(queue, None)
        if user is None:  # replaced: already off the count
            return
        mine = self._by_user.get(user, [])
        with contextlib.suppress(ValueError):
            mine.remove(queue)
        if not mine:
            self._by_user.pop(user, None)

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


def _gone(request: web.Request) -> bool:
    """Whether the client closed the connection. The server does not cancel a handler when its
    client goes (aiohttp's default), so a stream looks: else its slot would stay taken until the
    next write fails, and a user moving between pages would end their own live streams."""
    transport = request.transport
    return transport is None or transport.is_closing()


async def stream(
    request: web.Request, feed: LiveFeed, user: str, signed_in: Callable[[], Awaitable[bool]] | None = None
) -> web.StreamResponse:
    """The stream of `change` events for `user`; with `signed_in`, asked again at each heartbeat:
    a session that has ended since (a logout, a new password, a user removed) ends its streams too."""
    if request.headers.get("Last-Event-ID") == REPLACED:
        # the browser reconnecting a page whose stream a newer page replaced: a 204 stops it
        return web.Response(status=204, headers={"Cache-Control": "no-store"})
    resp = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    )
    await resp.prepare(request)
    queue = feed.subscribe(user)
    loop = asyncio.get_running_loop()
    try:
        await resp.write(b"retry: 3000\n\n")
        beat = loop.time() + feed.heartbeat
        while True:
            try:  # wakes at least every poll to notice a client that went away
                newest = await asyncio.wait_for(queue.get(), max(0.0, min(feed.poll, beat - loop.time())))
            except TimeoutError:
                if _gone(request):
                    break
                if loop.time() < beat:
                    continue
                beat = loop.time() + feed.heartbeat
                if signed_in is not None and not await signed_in():
                    break
                await resp.write(b": keep-alive\n\n")
                continue
            if newest == _CLOSED:
                break
            if newest == _REPLACED:  # the id makes the browser's reconnect ask for the 204 above
                await resp.write(f"id: {REPLACED}\nevent: {REPLACED}\ndata: \n\n".encode())
                break
            await resp.write(f"event: change\ndata: {newest}\n\n".encode())
            beat = loop.time() + feed.heartbeat
    except (ConnectionResetError, ConnectionError):
        pass  # the page went away
    finally:
        feed.unsubscribe(queue)
    return resp
