"""The `entrypoint` worker kind: a pool of long-lived processes that import the code once and
serve many resumes (one at a time each). A pool process that dies mid-request counts as a
transient failure and is replaced; a timeout kills its process group.

With `journal` set (the worker loop sets it), each process also gets a socket for its journal
calls (gateway.jobs.journal_pipe): the SDK's `DurableRun.from_env` uses it instead of HTTP, and
this side answers for the launch the process runs now, with that launch's token."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
from collections.abc import Awaitable, Callable

from gateway.jobs.launch import (
    TRACE_VARS,
    AttemptOutcome,
    AttemptResult,
    Launch,
    NotLaunched,
    exit_error,
    kill_group,
    reap,
)
from gateway.settings import WorkerSettings

Proc = asyncio.subprocess.Process
# A pool process's journal call (one JSON line) and the token of the launch it runs (None: none
# now) -> the answer line (gateway.jobs.journal_pipe.answer, bound to the run journal).
JournalCall = Callable[[str | None, bytes], Awaitable[bytes]]
JOURNAL_LINE_MAX = 2**28  # the longest journal call read (it is then refused past the body limit)


class EntrypointPool:
    def __init__(self, cfg: WorkerSettings) -> None:
        self.cfg = cfg
        self._idle: list[Proc] = []
        self._live: set[Proc] = set()
        self._freed = asyncio.Condition()
        # Told the approval id when a process takes its job: until then the job queues here, and
        # the admission (gateway.core.admission) counts it as waiting to launch.
        self.on_start: Callable[[str], None] | None = None
        self.journal: JournalCall | None = None
        self._serving: dict[int, str] = {}  # pid -> the resume token of the launch it runs now
        self._sockets: dict[int, asyncio.Task[None]] = {}  # pid -> the task answering its journal calls

    async def _spawn(self) -> Proc:
        ours, theirs = socket.socketpair() if self.journal is not None else (None, None)
        argv = [self.cfg.entrypoint, str(os.getpid())]  # the child dies with this process (gateway.jobs.orphans)
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "gateway.jobs.pool_child",
                *argv,
                *([] if theirs is None else [str(theirs.fileno())]),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                start_new_session=True,
                limit=2**24,
                # each job's TRACEPARENT is set for its call (pool_child): never the gateway's own
                env={k: v for k, v in os.environ.items() if k not in TRACE_VARS},
                pass_fds=() if theirs is None else (theirs.fileno(),),
            )
        except BaseException:
            if ours is not None:
                ours.close()
            raise
        finally:
            if theirs is not None:
                theirs.close()  # the child's end is the child's
        self._live.add(proc)
        if ours is not None:
            task = asyncio.create_task(self._answer(proc, ours), name=f"pool-journal-{proc.pid}")
            self._sockets[proc.pid] = task
        return proc

    async def _answer(self, proc: Proc, sock: socket.socket) -> None:
        """Answer `proc`'s journal calls, one line each, until it closes its end."""
        assert self.journal is not None
        # Lines are read whole (the 413 past the HTTP body limit is the journal call's): one
        # past even this bound leaves the two sides out of step, so the process is replaced.
        reader, writer = await asyncio.open_connection(sock=sock, limit=JOURNAL_LINE_MAX)
        try:
            while line := await reader.readline():
                writer.write(await self.journal(self._serving.get(proc.pid), line))
                await writer.drain()
        except ConnectionError:  # the process died mid-call
            pass
        except ValueError:  # a line past JOURNAL_LINE_MAX: its journal cannot go on
            if proc.returncode is None:
                kill_group(proc.pid)
        finally:
            writer.close()

    async def _acquire(self) -> Proc:
        async with self._freed:
            while True:
                while self._idle:
                    proc = self._idle.pop()
                    if proc.returncode is None:
                        return proc
                    self._forget(proc)
                if len(self._live) < self.cfg.pool_size:
                    return await self._spawn()
                await self._freed.wait()

    async def _release(self, proc: Proc, healthy: bool) -> None:
        async with self._freed:
            if healthy:
                self._idle.append(proc)
            else:
                self._forget(proc)
            self._freed.notify()

    def _forget(self, proc: Proc) -> None:
        self._live.discard(proc)
        task = self._sockets.pop(proc.pid, None)
        if task is not None:
            task.cancel()

    async def run(self, launch: Launch) -> AttemptResult:
        proc = await self._acquire()
        try:
            held = launch.may_start is None or await launch.may_start()
        except BaseException:
            await self._release(proc, True)
            raise
        if not held:  # another runner may be running it now, or this one is stopping
            await self._release(proc, True)
            raise NotLaunched(launch.approval_id)
        if self.on_start is not None:
            self.on_start(launch.approval_id)
        try:
            return await self._ask(proc, launch)
        finally:
            await self._release(proc, proc.returncode is None)

    async def _ask(self, proc: Proc, launch: Launch) -> AttemptResult:
        self._serving[proc.pid] = launch.token  # its journal calls reach this launch's run only
        try:
            return await self._exchange(proc, launch)
        finally:
            self._serving.pop(proc.pid, None)

    async def _exchange(self, proc: Proc, launch: Launch) -> AttemptResult:
        assert proc.stdin is not None and proc.stdout is not None
        request = json.dumps({"document": launch.document, "env": launch.env()}) + "\n"
        try:
            async with asyncio.timeout(self.cfg.timeout.total_seconds()):
                proc.stdin.write(request.encode("utf-8"))
                await proc.stdin.drain()
                line = await proc.stdout.readline()
        except TimeoutError:
            kill_group(proc.pid)
            await proc.wait()
            return AttemptResult(
                AttemptOutcome.TRANSIENT, f"pool process timed out after {self.cfg.timeout.total_seconds():g}s"
            )
        except (BrokenPipeError, ConnectionResetError):
            line = b""
        except BaseException:
            await reap(proc)
            raise
        if not line:
            code = await proc.wait()
            return AttemptResult(AttemptOutcome.TRANSIENT, f"pool process died ({exit_error(code)})")
        reply = json.loads(line)
        return AttemptResult(AttemptOutcome(reply["verdict"]), reply.get("error"), reply.get("output"))

    async def close(self) -> None:
        for proc in list(self._live):
            if proc.stdin is not None:
                proc.stdin.close()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(2):
                    await proc.wait()
            kill_group(proc.pid)
            if proc.returncode is None:
                await proc.wait()
        for task in self._sockets.values():
            task.cancel()
        await asyncio.gather(*self._sockets.values(), return_exceptions=True)
        self._sockets.clear()
        self._live.clear()
        self._idle.clear()
