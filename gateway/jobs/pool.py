"""The `entrypoint` worker kind: a pool of long-lived processes that import the code once and
serve many resumes (one at a time each). A pool process that dies mid-request counts as a
transient failure and is replaced; a timeout kills its process group."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Callable

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


class EntrypointPool:
    def __init__(self, cfg: WorkerSettings) -> None:
        self.cfg = cfg
        self._idle: list[Proc] = []
        self._live: set[Proc] = set()
        self._freed = asyncio.Condition()
        # Told the approval id when a process takes its job: until then the job queues here, and
        # the admission (gateway.core.admission) counts it as waiting to launch.
        self.on_start: Callable[[str], None] | None = None

    async def _spawn(self) -> Proc:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "gateway.jobs.pool_child",
            self.cfg.entrypoint,
            str(os.getpid()),  # the child dies with this process (gateway.jobs.orphans)
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            start_new_session=True,
            limit=2**24,
            # each job's TRACEPARENT is set for its call (pool_child): never the gateway's own
            env={k: v for k, v in os.environ.items() if k not in TRACE_VARS},
        )
        self._live.add(proc)
        return proc

    async def _acquire(self) -> Proc:
        async with self._freed:
            while True:
                while self._idle:
                    proc = self._idle.pop()
                    if proc.returncode is None:
                        return proc
                    self._live.discard(proc)
                if len(self._live) < self.cfg.pool_size:
                    return await self._spawn()
                await self._freed.wait()

    async def _release(self, proc: Proc, healthy: bool) -> None:
        async with self._freed:
            if healthy:
                self._idle.append(proc)
            else:
                self._live.discard(proc)
            self._freed.notify()

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
        self._live.clear()
        self._idle.clear()
