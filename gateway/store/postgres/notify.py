"""LISTEN/NOTIFY wake-ups between replicas: after a commit, the others' loops look again at
once instead of at their next poll. Only a hint: every loop still polls, so a lost connection or
a lost NOTIFY costs latency, never work."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import asyncpg

from gateway.store.sql import queries

__all__ = ["TOPICS", "Listener", "Notifier", "Notify"]

log = logging.getLogger("gateway.store.postgres")

# NOTIFY channels -> the topic handed to subscribers.
TOPICS = {"hitl_outbox": "outbox", "hitl_jobs": "jobs", "hitl_wake": "wake"}
Notify = Callable[[str, str], None]
Q = queries("postgres")


class Listener:
    """One dedicated connection that LISTENs on the wake-up channels and calls back.

    A lost connection only costs latency: every loop still polls. It is re-opened on the next
    `revive()` (called from the outbox loop's claim)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.callbacks: list[Notify] = []
        self._conn: asyncpg.Connection | None = None

    def _on_notify(self, _conn: Any, _pid: int, channel: str, payload: str) -> None:
        topic = TOPICS.get(channel)
        if topic is None:
            return
        for fn in list(self.callbacks):
            try:
                fn(topic, payload)
            except Exception:  # a subscriber's bug must not kill the listener
                log.exception("wake-up subscriber failed")

    async def ensure(self) -> None:
        if not self.callbacks or (self._conn is not None and not self._conn.is_closed()):
            return
        conn = await asyncpg.connect(self.url)
        for channel in TOPICS:
            await conn.add_listener(channel, self._on_notify)
        self._conn = conn

    async def revive(self) -> None:
        """Re-open a lost LISTEN connection; failing quietly (polling still works)."""
        try:
            await self.ensure()
        except Exception as exc:
            log.warning("cannot LISTEN for wake-ups (%s); polling only", type(exc).__name__)

    async def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            if not conn.is_closed():
                await conn.close()


class Notifier:
    """Sends wake-up NOTIFYs after commits, coalesced, on one connection of its own.

    Not inside the writing transaction: PostgreSQL serialises the commits of every transaction
    that notifies (a global queue lock held through the commit's WAL flush), which cut
    concurrent suspend throughput by about 3x here (docs/postgres.md). After the commit, a
    notify-only transaction with `synchronous_commit = off` holds that lock for microseconds,
    and bursts of commits share one notify per channel. A wake-up is a hint: if this process
    dies between the commit and the notify, the other replicas' polling picks the work up.

    `wanted` says whether anyone may listen: a claiming replica that saw no other live replica
    at its last heartbeat (liveness.py) sends nothing, a round trip and a transaction saved per
    commit; it sends again from the heartbeat that sees another one."""

    def __init__(self, url: str, wanted: Callable[[], bool] = lambda: True) -> None:
        self.url = url
        self.wanted = wanted
        self._pending: dict[str, str] = {}
        self._task: asyncio.Task[None] | None = None
        self._conn: asyncpg.Connection | None = None

    def committed(self, *, outbox: bool = False, jobs: bool = False, wake_at: float | None = None) -> None:
        """Wake the other replicas' loops for what was just committed (`wake_at`: epoch seconds)."""
        if not self.wanted():
            return
        if outbox:
            self.send("hitl_outbox")
        if jobs:
            self.send("hitl_jobs")
        if wake_at is not None:
            self.send("hitl_wake", repr(wake_at))

    def send(self, channel: str, payload: str = "") -> None:
        if channel == "hitl_wake" and channel in self._pending:  # the earliest wake-up matters
            payload = min(payload, self._pending[channel], key=float)
        self._pending[channel] = payload
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._flush(), name="pg-notify")

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, {}
            try:
                if self._conn is None or self._conn.is_closed():
                    self._conn = await asyncpg.connect(self.url, server_settings={"synchronous_commit": "off"})
                await self._conn.execute(Q.notify, list(batch), list(batch.values()))
            except Exception as exc:  # polling still finds the work
                log.warning("wake-up NOTIFY failed (%s); other replicas will poll", type(exc).__name__)
                return

    async def close(self) -> None:
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 2)
            self._task = None
        if self._conn is not None:
            conn, self._conn = self._conn, None
            if not conn.is_closed():
                await conn.close()
