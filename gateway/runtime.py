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

from gateway.core.admission import Gate
from gateway.core.channels import Channel, WebChannel
from gateway.core.clock import Clock, SystemClock, from_ts
from gateway.core.errors import ConfigError
from gateway.core.identity import WEB
from gateway.core.observers import Observer, Observers
from gateway.core.tokens import TokenSigner
from gateway.core.traces import Tracer
from gateway.delivery.events import WebhookSender
from gateway.delivery.outbox import OutboxRunner
from gateway.delivery.spec import ChannelContext
from gateway.jobs.worker import WorkerRunner
from gateway.service import Inbound, Service, routing
from gateway.service.audit import AuditService
from gateway.service.deliveries import Deliveries
from gateway.service.events import Webhooks
from gateway.service.housekeeping import Pruning
from gateway.service.jobs import Jobs
from gateway.service.journal import RunJournal
from gateway.service.maintenance import Maintenance
from gateway.service.push import PushSubscriptions
from gateway.service.queries import Reads
from gateway.service.ruleops import RuleOps
from gateway.service.timers import Timers
from gateway.service.websessions import WebSessions
from gateway.settings import Settings
from gateway.sla.housekeeping import Housekeeper
from gateway.sla.scheduler import SlaScheduler
from gateway.store import Store, open_store
from gateway.telemetry import tracing
from gateway.telemetry.metrics import Metrics

log = logging.getLogger("gateway.runtime")
# Seconds a loop still running at the shutdown deadline (running jobs had server.shutdown_timeout)
# gets to end once cancelled, before it is abandoned; and what handing back the claims and each
# close may take. The worst case stays inside shutdown_timeout + 5 s (the serve watchdog's limit).
STOP_TIMEOUT = 1.0
CLOSE_TIMEOUT = 1.0
SEAL_TIMEOUT = 5.0  # the last checkpoint at stop: one transaction over the heads moved since the last one
CHANNEL_CLOSE_TIMEOUT = 3.5
LIVENESS_EVERY = 0.5  # seconds between heartbeats and reaps of gone replicas (PostgreSQL)
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


async def _bounded(name: str, close: Callable[[], Coroutine[Any, Any, None]], seconds: float) -> None:
    try:
        async with asyncio.timeout(seconds):
            await close()
    except Exception as exc:
        log.error("closing the %s failed at shutdown: %s", name, type(exc).__name__)


def _report_failed_loop(task: asyncio.Task[None]) -> None:
    """A background loop that died is logged when it dies (/readyz turns 503), not at exit."""
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.error("background loop %s failed; /readyz reports it", task.get_name(), exc_info=exc)


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
        tracer: Tracer | None = None,
    ) -> None:
        self.settings = settings
        self.clock: Clock = clock or SystemClock()
        self.store: Store = store or open_store(settings.store.url)
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}"
        self.signer = TokenSigner(settings.security.secret_keys)
        # Everything that listens to commits is wired here: the loops' wake-ups and the metrics.
        self.observers = Observers()
        self.metrics = self.observers.add(Metrics())
        # Spans of suspends, cards, decisions and launches, in each approval's trace (docs/traces.md).
        self.tracer = tracer or tracing.tracer()
        self.observers.add(tracing.DecisionSpans(self.tracer))
        self.service = Service(settings, self.store, self.clock, self.signer, self.observers, self.tracer)
        self.reads = Reads(self.store)
        self.web_sessions = WebSessions(self.store, self.clock)
        self._http: aiohttp.ClientSession | None = None
        self.channels: dict[str, Channel] = {WEB: WebChannel()}
        self.inbound = Inbound(
            self.service.decisions,
            self.store,
            self.clock,
            self.signer,
            public_url=settings.server.public_url,
            channels=self.channels,
            wake_outbox=self.service.wake_outbox,
        )
        self.push = PushSubscriptions(
            self.store, self.clock, self.service.authorizer, self.signer, settings.web.passwords
        )
        if settings.webpush.enabled:
            self.channels[WEB] = self._pushing_web_channel()
        for kind in sorted(settings.enabled_channels() - {WEB}):
            self.channels[kind] = settings.channels[kind].spec.create(self.channel_context(kind))
        self.service.channels = self.channels
        # The use cases the loops, handlers and commands get (each holds the store; they do not).
        operators = settings.security.principals().has_operators
        self.deliveries = Deliveries(self.store, self.clock, self.observers, has_operators=operators)
        announcer = self.service.announcer if settings.events.webhooks else None
        self.jobs = Jobs(self.store, self.clock, self.observers, has_operators=operators, announcer=announcer)
        self.journal = RunJournal(self.store, self.service, self.service.redactor)
        self.maintenance = Maintenance(self.store)
        self.rule_ops = RuleOps(settings, self.store, self.clock)
        # the dashboard's view of the outbound events, and an operator's "send again"
        self.webhooks = Webhooks(self.store, settings.events, self.clock, self.observers, has_operators=operators)
        # Decided approvals first: while their resume jobs wait to launch, suspends and new
        # cards' posts wait, at most `[scheduler] admission_wait` (gateway/core/admission.py).
        bound = settings.scheduler.admission_wait.total_seconds()
        self.gate = Gate(self.clock, bound, held=self.metrics.suspend_held)
        self.service.gate = self.gate
        self.outbox = OutboxRunner(
            self.deliveries,
            self.channels,
            self.clock,
            self.owner,
            lease=settings.store.lease,
            observer=self.observers,
            webhooks=self._webhook_sender(),
            tracer=self.tracer,
            gate=self.gate,
        )
        self.loops: list[Callable[[], Coroutine[Any, Any, None]]] = [self.outbox.run_forever]
        self.worker = WorkerRunner(
            self.jobs,
            self.service,
            self.clock,
            self.owner,
            lease=settings.store.lease,
            tracer=self.tracer,
            gate=self.gate,
            concurrency=settings.scheduler.resume_concurrency,
            prefetch=settings.scheduler.resume_prefetch,
            journal=self.journal,
        )
        self.loops.append(self.worker.run_forever)
        self.scheduler = SlaScheduler(
            Timers(self.store, self.service),
            self.clock,
            batch=settings.scheduler.batch,
            poll_interval=settings.scheduler.poll_interval,
            owner=self.owner,
            lease=settings.store.lease,
        )
        self.loops.append(self.scheduler.run_forever)
        self.observers.add(WakeUps(self.outbox, self.worker, self.scheduler))
        self.housekeeper = Housekeeper(Pruning(self.store), self.clock, raw_after=settings.retention.raw_after)
        self.loops.append(self.housekeeper.run_forever)
        every = settings.audit.checkpoint_every.total_seconds()
        self.audit = AuditService(self.store, self.clock, settings.audit.signing_key, every=every)
        self.loops.append(self.audit.run_forever)
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False
        self._claiming = False  # take_over done: release_claims at stop
        self._stop_by: float | None = None  # loop time by which running jobs must have finished

    def _pushing_web_channel(self) -> Channel:
        """The web channel that also pushes its cards to subscribed approvers (`[webpush]`)."""
        try:
            from gateway.delivery.webpush import PushingWebChannel
        except ImportError as exc:  # the `webpush` extra is not installed
            hint = f"Web Push needs the extra `webpush` ({exc}): pip install ./sdk '.[webpush]'"
            raise ConfigError("webpush", hint) from None
        public_url = self.settings.server.public_url
        return PushingWebChannel(self.settings.webpush, public_url, self.signer, self.push)

    def _webhook_sender(self) -> WebhookSender | None:
        """What signs and sends the outbound events, with `[[events.webhooks]]`."""
        if not self.settings.events.webhooks:
            return None
        try:
            return WebhookSender(self.settings.events, self.clock, self.http_session)
        except ImportError as exc:  # the `events` extra is not installed
            hint = f"signed events need the extra `events` ({exc}): pip install ./sdk '.[events]'"
            raise ConfigError("events.webhooks", hint) from None

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
            approvers=self.service.authorizer.allowlist(f"{kind}:"),
        )

    def http_session(self) -> aiohttp.ClientSession:
        """One client session shared by the channels (opened on first use, in the running loop)."""
        if self._http is None or self._http.closed:
            self._http = aiohttp.ClientSession()
        return self._http

    async def start(self, *, background: bool = True, exclusive: bool = False) -> None:
        """Open the store and the channels; with `background`, take over the claims of claimers
        proved gone (`Store.take_over`; `exclusive`: a `serve`, which holds a SQLite file alone)
        and start the loops. A start that fails half-way closes what it opened."""
        try:
            await self.store.open()
            self._started = True
            if background:
                released = await self.store.take_over(self.owner, self.clock.now(), exclusive=exclusive)
                self._claiming = True
                if released:
                    log.warning("took over %d claims (jobs, deliveries, wake-ups) of a gateway that is gone", released)
            await self.store.subscribe(self._on_wakeup)
            if background and (keys := routing.undecidable(self.settings)):
                log.warning(
                    "nobody may decide on %s: %s empty (and no [people] identity of that kind); its cards carry"
                    " no buttons",
                    ", ".join(k.split(".")[0] for k in keys),
                    " and ".join(keys),
                )
            for channel in self.channels.values():
                await channel.start()
        except BaseException:
            await self.stop()
            raise
        _freeze_startup_heap()
        if background:
            # Seal what a killed predecessor wrote since its last checkpoint before serving, so
            # that `audit verify` never sees it unsealed once this gateway is up.
            try:
                await self.audit.run_once()
            except Exception:  # the store hiccupped: the audit loop seals on its first round
                log.exception("audit: the checkpoint at start failed")
            loops = [*self.loops, self._liveness] if self.store.dialect != "sqlite" else self.loops
            self._tasks = [asyncio.create_task(loop(), name=getattr(loop, "__qualname__", "loop")) for loop in loops]
            for task in self._tasks:
                task.add_done_callback(_report_failed_loop)

    async def _liveness(self) -> None:
        """Prove this process alive and take over, within about two seconds, the claims of the
        replicas that are gone (postgres/liveness.py); their work is claimed at once."""
        failing = False
        while True:
            await asyncio.sleep(LIVENESS_EVERY)
            try:
                released = await self.store.reap(self.owner, self.clock.now())
            except Exception as exc:  # the database is away: polling and leases still hold
                if not failing:  # once per outage, not twice a second
                    log.warning("liveness heartbeat failed (%s); retrying", type(exc).__name__)
                failing = True
                continue
            if failing:
                log.info("liveness heartbeat renewed")
                failing = False
            if released:
                log.warning("took over %d claims of a replica that is gone", released)
                self.observers.outbox_queued()
                self.observers.jobs_queued()
                self.observers.wake_at(self.clock.now())

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

    def begin_stop(self) -> None:
        """SIGTERM (serve's on_shutdown, while in-flight requests drain): stop claiming now; the
        jobs running now get `server.shutdown_timeout` from now to finish. Idempotent."""
        if self._stop_by is not None:
            return
        self._stop_by = asyncio.get_running_loop().time() + self.settings.server.shutdown_timeout.total_seconds()
        self.outbox.stop()
        self.worker.stop(self._stop_by)
        self.scheduler.stop()

    async def stop(self) -> None:
        """Stop claiming, let the running jobs finish (until the deadline `begin_stop` set), hand
        back every claim still held, close everything. Bounded whatever fails or hangs: a loop
        still running at the deadline is cancelled, then abandoned (logged with its stack), and
        the store is closed on every path."""
        self.begin_stop()
        try:
            await self._stop_loops()
            if self._claiming:
                self._claiming = False
                await self._hand_back()
                with contextlib.suppress(Exception):  # a gateway stopped on purpose leaves nothing unsealed
                    async with asyncio.timeout(SEAL_TIMEOUT):
                        await self.audit.run_once()
        finally:
            await self._close_all()
            self._stop_by = None

    async def _hand_back(self) -> None:
        """Hand back every claim still held, bounded. If it fails or runs out of time, the claims
        are not lost: on PostgreSQL this replica stays registered and the others take them over
        once it is gone (postgres/handover.py); on SQLite the next `serve` does at its start."""
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT):
                released = await self.store.release_claims(self.owner, self.clock.now())
        except Exception as exc:
            log.warning("handing back the claims failed (%s); the other replicas take them over", type(exc).__name__)
            return
        if released:
            log.info("handed back %d claims (jobs, deliveries, wake-ups)", released)

    async def _stop_loops(self) -> None:
        if not self._tasks:
            return
        loop = asyncio.get_running_loop()
        assert self._stop_by is not None
        # The outbox, worker and scheduler stop claiming and finish what they started (until the
        # deadline); the other loops (housekeeping, liveness) have nothing to finish.
        graceful = {self.outbox.run_forever, self.worker.run_forever, self.scheduler.run_forever}
        names = {getattr(loop_fn, "__qualname__", "") for loop_fn in graceful}
        finishing = [task for task in self._tasks if task.get_name() in names]
        for task in self._tasks:
            if task not in finishing:
                task.cancel()
        if finishing:
            await asyncio.wait(finishing, timeout=max(self._stop_by - loop.time(), 0) + 0.1)
        for task in self._tasks:
            task.cancel()  # a no-op on the tasks that are done
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

    async def _close_all(self) -> None:
        """Close the launchers, channels and HTTP session together, then the store, each bounded
        and on its own: one that fails or hangs does not keep the others (the store above all)
        open. A channel gets CHANNEL_CLOSE_TIMEOUT (a socket-mode channel lets envelopes being
        decided be acked); if everything hangs at once, serve's watchdog still ends the process."""
        closers: list[tuple[str, Callable[[], Coroutine[Any, Any, None]], float]] = [
            ("worker", self.worker.close, CLOSE_TIMEOUT)
        ]
        closers += [(f"channel {kind}", ch.close, CHANNEL_CLOSE_TIMEOUT) for kind, ch in self.channels.items()]
        if self._http is not None:
            closers.append(("http session", self._http.close, CLOSE_TIMEOUT))
            self._http = None
        await asyncio.gather(*(_bounded(name, close, seconds) for name, close, seconds in closers))
        if self._started:
            self._started = False
            await _bounded("store", self.store.close, 2 * CLOSE_TIMEOUT)

    async def ready(self) -> bool:
        """The store answers and every loop runs; false once stopping (a load balancer stops
        routing to a gateway that hands its work back)."""
        if self._stop_by is not None:
            return False
        try:
            await self.store.next_wake_at()  # an index probe: O(log n), not a count of every approval
        except Exception:
            return False
        return all(not t.done() for t in self._tasks)
