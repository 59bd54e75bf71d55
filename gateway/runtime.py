"""Wiring: one Runtime per process holds the store, service, channels and background loops."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import socket
import traceback
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Any

import aiohttp

from gateway.config import Settings
from gateway.core.clock import Clock, SystemClock, from_ts
from gateway.core.identity import WEB
from gateway.core.observers import Observer, Observers
from gateway.core.tokens import TokenSigner
from gateway.delivery.channels import Channel, WebChannel
from gateway.delivery.outbox import OutboxRunner
from gateway.delivery.spec import ChannelContext
from gateway.jobs.worker import WorkerRunner
from gateway.service import Inbound, Service
from gateway.service.audit import AuditService
from gateway.sla.housekeeping import Housekeeper
from gateway.sla.scheduler import SlaScheduler
from gateway.store import Store, open_store
from gateway.telemetry.metrics import Metrics

log = logging.getLogger("gateway.runtime")
STOP_TIMEOUT = 10.0  # seconds a background loop gets to finish when the runtime stops
_startup_frozen = False


def _freeze_startup_heap() -> None:
    """Once per process, after the first start: move what start-up built (modules, settings,
    clients) out of the cyclic GC's reach. It lives as long as the process anyway, and every
    full collection stops walking it: a timeout storm of 10^5 triggers about 20, which took
    ~20 ms each (0.4 s in all) and take ~1 ms after. Objects still die by reference count."""
    global _startup_frozen
    if not _startup_frozen:
        _startup_frozen = True
        gc.collect()
        gc.freeze()


class WakeUps(Observer):
    """The background loops wake early when a commit queued their work or moved a deadline
    (other replicas poll, or hear a NOTIFY: `Runtime._on_wakeup`)."""

    def __init__(self, outbox: OutboxRunner, worker: WorkerRunner, scheduler: SlaScheduler) -> None:
        self.outbox, self.worker, self.scheduler = outbox, worker, scheduler

    def outbox_queued(self) -> None:
        self.outbox.notify()

    def jobs_queued(self) -> None:
        self.worker.notify()

    def wake_at(self, when: datetime) -> None:
        self.scheduler.notify(when)


class Runtime:
    def __init__(
        self,
        settings: Settings,
        *,
        clock: Clock | None = None,
        store: Store | None = None,
        owner: str | None = None,
    ) -> None:
        self.settings = settings
        self.clock: Clock = clock or SystemClock()
        self.store: Store = store or open_store(settings.store.url)
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}"
        self.signer = TokenSigner(settings.security.secret_keys)
        # Everything that listens to commits is wired here: the loops' wake-ups and the metrics.
        self.observers = Observers()
        self.metrics = self.observers.add(Metrics())
        self.service = Service(settings, self.store, self.clock, self.signer, self.observers)
        self.inbound = Inbound(self.service)
        self._http: aiohttp.ClientSession | None = None
        self.channels: dict[str, Channel] = {WEB: WebChannel()}
        for kind in sorted(settings.enabled_channels() - {WEB}):
            self.channels[kind] = settings.channels[kind].spec.create(self.channel_context(kind))
        self.service.channels = self.channels
        self.outbox = OutboxRunner(
            self.store, self.channels, self.clock, self.owner, lease=settings.store.lease, observer=self.observers
        )
        self.loops: list[Callable[[], Coroutine[Any, Any, None]]] = [self.outbox.run_forever]
        self.worker = WorkerRunner(self.service, self.clock, self.owner, lease=settings.store.lease)
        self.loops.append(self.worker.run_forever)
        self.scheduler = SlaScheduler(
            self.service,
            self.store,
            self.clock,
            batch=settings.scheduler.batch,
            poll_interval=settings.scheduler.poll_interval,
            owner=self.owner,
            lease=settings.store.lease,
        )
        self.loops.append(self.scheduler.run_forever)
        self.observers.add(WakeUps(self.outbox, self.worker, self.scheduler))
        self.housekeeper = Housekeeper(self.store, self.clock, raw_after=settings.retention.raw_after)
        self.loops.append(self.housekeeper.run_forever)
        every = settings.audit.checkpoint_every.total_seconds()
        self.audit = AuditService(self.store, self.clock, settings.audit.signing_key, every=every)
        self.loops.append(self.audit.run_forever)
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False

    def channel_context(self, kind: str) -> ChannelContext:
        """What the channel `kind` may use: its section, the signer, the clock, the inbound use
        cases and the shared HTTP client session (never the store or the runtime itself)."""
        return ChannelContext(
            kind=kind,
            settings=self.settings.channel(kind),
            public_url=self.settings.server.public_url.rstrip("/"),
            signer=self.signer,
            clock=self.clock,
            inbound=self.inbound,
            http=self.http_session,
        )

    def http_session(self) -> aiohttp.ClientSession:
        """One client session shared by the channels (opened on first use, in the running loop)."""
        if self._http is None or self._http.closed:
            self._http = aiohttp.ClientSession()
        return self._http

    async def start(self, *, background: bool = True) -> None:
        await self.store.open()
        await self.store.subscribe(self._on_wakeup)
        for channel in self.channels.values():
            await channel.start()
        self._started = True
        _freeze_startup_heap()
        if background:
            self._tasks = [
                asyncio.create_task(loop(), name=getattr(loop, "__qualname__", "loop")) for loop in self.loops
            ]

    def _on_wakeup(self, topic: str, payload: str) -> None:
        """Another replica committed work: tell the observers what a local commit would."""
        if topic == "outbox":
            self.observers.outbox_queued()
        elif topic == "jobs":
            self.observers.jobs_queued()
        elif topic == "wake":
            with contextlib.suppress(ValueError, OverflowError, OSError):
                when = from_ts(float(payload))
                if when is not None:
                    self.observers.wake_at(when)

    async def stop(self) -> None:
        """Cancel the background loops and close everything. A loop that does not finish within
        STOP_TIMEOUT seconds is logged with its stack and abandoned: shutdown must never hang."""
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            done, pending = await asyncio.wait(self._tasks, timeout=STOP_TIMEOUT)
            for task in done:
                if not task.cancelled():
                    task.exception()  # retrieved: a loop that died is not re-reported at exit
            for task in pending:
                stack = "".join(traceback.format_stack(task.get_stack()[-1])) if task.get_stack() else "?"
                log.error(
                    "background loop %s did not stop within %.1fs; abandoning it at:\n%s",
                    task.get_name(),
                    STOP_TIMEOUT,
                    stack,
                )
        self._tasks = []
        await self.worker.close()
        for channel in self.channels.values():
            with contextlib.suppress(Exception):
                await channel.close()
        if self._http is not None:
            await self._http.close()
            self._http = None
        if self._started:
            await self.store.close()
            self._started = False

    async def ready(self) -> bool:
        try:
            await self.store.next_wake_at()  # an index probe: O(log n), not a count of every approval
        except Exception:
            return False
        return all(not t.done() for t in self._tasks)
