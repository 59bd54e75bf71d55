"""How one attempt of a resume job runs: outcome classification (pure) and the `command` and
`url` launchers. The `entrypoint` pool lives in `gateway.jobs.pool`.

Classification: exit 0 or a 2xx reply succeeds; exit 75, a signal, a timeout,
a 429, a 5xx or a connection error is transient (retried); anything else is terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
import signal
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol
from urllib.parse import urlsplit

import aiohttp
from hitl_sdk.signature import sign
from hitl_sdk.signature import verify as verify  # re-exported: receivers import it from here too

from gateway.core.keys import canonical_json
from gateway.core.traces import TraceContext
from gateway.jobs.orphans import guarded
from gateway.settings import WorkerSettings

EX_TEMPFAIL = 75
TRACE_VARS = ("TRACEPARENT", "TRACESTATE")
TAIL_BYTES = 4096


class AttemptOutcome(StrEnum):
    SUCCEEDED = "succeeded"
    TRANSIENT = "transient"
    TERMINAL = "terminal"


class NotLaunched(Exception):
    """A queued launch withdrawn before it started (`Launch.may_start` said no): its job's lease
    is gone, or its runner is stopping. Nothing ran, so there is no outcome to record."""


@dataclass(frozen=True, slots=True)
class AttemptResult:
    verdict: AttemptOutcome
    error: str | None = None
    output: str | None = None  # the raw tail (the runner redacts it before storing)


@dataclass(frozen=True, slots=True)
class Launch:
    """What an attempt gets: the rehydration document and the worker's environment.
    `idempotency_key` (gateway.core.effects) is the same on every attempt of the job: it is in
    the environment, in the document (`idempotency_key`) and, for `url` workers, a header."""

    approval_id: str
    document: dict[str, Any]
    token: str
    gateway_url: str
    idempotency_key: str
    # The job launch span's context: the worker continues the approval's trace from it
    # (TRACEPARENT and TRACESTATE; for a `url` worker, the W3C headers).
    trace: TraceContext | None = None
    # Whether the job may still start, asked by a pool once a process is free: a job that waited
    # for one may have lost its lease meanwhile (another runner may be running it), or its runner
    # may be stopping (it would be cut mid-step). The other kinds launch at once, inside the claim.
    may_start: Callable[[], Awaitable[bool]] | None = None

    def env(self) -> dict[str, str]:
        return {
            "HITL_RESUME_TOKEN": self.token,
            "HITL_APPROVAL_ID": self.approval_id,
            "HITL_GATEWAY_URL": self.gateway_url,
            "HITL_IDEMPOTENCY_KEY": self.idempotency_key,
        } | (self.trace.env() if self.trace else {})


class Launcher(Protocol):
    async def run(self, launch: Launch) -> AttemptResult: ...

    async def close(self) -> None: ...


def classify_exit(returncode: int) -> AttemptOutcome:
    """A process's exit status (negative = killed by that signal, as asyncio reports it)."""
    if returncode == 0:
        return AttemptOutcome.SUCCEEDED
    if returncode == EX_TEMPFAIL or returncode < 0:
        return AttemptOutcome.TRANSIENT
    return AttemptOutcome.TERMINAL


def classify_http(status: int) -> AttemptOutcome:
    if 200 <= status < 300:
        return AttemptOutcome.SUCCEEDED
    if status == 429 or status >= 500:
        return AttemptOutcome.TRANSIENT
    return AttemptOutcome.TERMINAL


def exit_error(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}"
    return f"exit status {returncode}"


class Tail:
    """The last `limit` bytes of a stream."""

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        self.limit, self.data, self.dropped = limit, bytearray(), False

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > self.limit:
            del self.data[: len(self.data) - self.limit]
            self.dropped = True

    def text(self) -> str:
        return ("…" if self.dropped else "") + self.data.decode("utf-8", "replace")


def join_tails(stdout: str, stderr: str) -> str | None:
    parts = [f"[{name}]\n{text.rstrip()}" for name, text in (("stdout", stdout), ("stderr", stderr)) if text.strip()]
    return "\n".join(parts) or None


def kill_group(pid: int) -> None:
    """SIGKILL the whole process group led by `pid` (the worker and anything it started)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def reap(proc: asyncio.subprocess.Process) -> None:
    """Kill the process group and collect the exit status (no zombie, no unclosed transport)."""
    kill_group(proc.pid)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(proc.wait(), 5)


async def _pump(stream: asyncio.StreamReader | None, tail: Tail) -> None:
    if stream is None:
        return
    while chunk := await stream.read(65536):
        tail.add(chunk)


async def _feed(stream: asyncio.StreamWriter | None, body: bytes) -> None:
    if stream is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stream.write(body)
        await stream.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
        stream.close()


class CommandLauncher:
    """A subprocess in its own process group that dies with the gateway (`gateway.jobs.orphans`); the
    document on stdin; the tail of its output kept."""

    def __init__(self, cfg: WorkerSettings, base_env: Mapping[str, str] | None = None) -> None:
        self.cfg = cfg
        self.base_env = dict(os.environ if base_env is None else base_env)
        for name in TRACE_VARS:  # a worker continues its approval's trace, or none: not the gateway's
            self.base_env.pop(name, None)

    async def run(self, launch: Launch) -> AttemptResult:
        try:
            if shutil.which(self.cfg.command[0]) is None:  # checked here: the guard below would exec it
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), self.cfg.command[0])
            proc = await asyncio.create_subprocess_exec(
                *guarded(self.cfg.command),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env={**self.base_env, **launch.env()},  # base_env has no TRACE*: never the gateway's own
                start_new_session=True,
            )
        except OSError as exc:  # not found, not executable: retrying will not help
            return AttemptResult(AttemptOutcome.TERMINAL, f"cannot start {self.cfg.command[0]!r}: {exc.strerror}")
        out, err = Tail(), Tail()
        body = canonical_json(launch.document).encode("utf-8")
        try:
            async with asyncio.timeout(self.cfg.timeout.total_seconds()):
                await asyncio.gather(_pump(proc.stdout, out), _pump(proc.stderr, err), _feed(proc.stdin, body))
                returncode = await proc.wait()
        except TimeoutError:
            await reap(proc)  # bounded: a wait that never returns would hold the job forever
            why = f"timed out after {self.cfg.timeout.total_seconds():g}s; process group killed"
            return AttemptResult(AttemptOutcome.TRANSIENT, why, join_tails(out.text(), err.text()))
        except BaseException:  # cancelled (shutdown): leave nothing running
            await reap(proc)
            raise
        verdict = classify_exit(returncode)
        error = None if verdict is AttemptOutcome.SUCCEEDED else exit_error(returncode)
        return AttemptResult(verdict, error, join_tails(out.text(), err.text()))

    async def close(self) -> None:
        return None


class UrlLauncher:
    """An HTTP POST of the document, signed; redirects are not followed (SSRF guard)."""

    def __init__(self, cfg: WorkerSettings, secret: str) -> None:
        self.cfg, self.secret = cfg, secret
        self._session: aiohttp.ClientSession | None = None

    def _check_host(self) -> None:
        host = (urlsplit(self.cfg.url).hostname or "").lower()
        if host not in {h.lower() for h in self.cfg.allowed_hosts}:
            raise PermissionError(f"host {host!r} is not in workers.{self.cfg.name}.allowed_hosts")

    async def run(self, launch: Launch) -> AttemptResult:
        try:
            self._check_host()
        except PermissionError as exc:
            return AttemptResult(AttemptOutcome.TERMINAL, str(exc))
        body = canonical_json(launch.document).encode("utf-8")
        headers = {
            "Content-Type": "application/json",
            "X-HITL-Signature": sign(body, self.secret, int(time.time())),
            "X-HITL-Approval-Id": launch.approval_id,
            "X-HITL-Resume-Token": launch.token,
            "X-HITL-Gateway-Url": launch.gateway_url,
            "Idempotency-Key": launch.idempotency_key,  # the header payment APIs de-duplicate on
        } | (launch.trace.headers() if launch.trace else {})
        if self._session is None:
            self._session = aiohttp.ClientSession()
        timeout = aiohttp.ClientTimeout(total=self.cfg.timeout.total_seconds())
        try:
            async with self._session.post(
                self.cfg.url, data=body, headers=headers, allow_redirects=False, timeout=timeout
            ) as resp:
                text = (await resp.read())[-TAIL_BYTES:].decode("utf-8", "replace")
                status = resp.status
        except TimeoutError:
            return AttemptResult(AttemptOutcome.TRANSIENT, f"timed out after {self.cfg.timeout.total_seconds():g}s")
        except aiohttp.ClientError as exc:
            return AttemptResult(AttemptOutcome.TRANSIENT, f"connection error: {type(exc).__name__}")
        verdict = classify_http(status)
        return AttemptResult(verdict, None if verdict is AttemptOutcome.SUCCEEDED else f"HTTP {status}", text or None)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
