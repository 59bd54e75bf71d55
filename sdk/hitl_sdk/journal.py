"""Where a DurableRun keeps its journal. `HttpJournal`: the gateway's `/v1/runs/{run_id}/steps`,
opened by an API key or by the resume token of one of the run's approvals (what a worker gets).
`PipeJournal`: inside a gateway's `entrypoint` pool process, the same journal over the socket
the gateway gave that process (`HITL_JOURNAL_FD`), answered with the launch's own token: no HTTP
request per step (`DurableRun.from_env` picks it there).

The gateway's own package adds `gateway.sdk.StoreJournal`, which opens the store directly (same
DB URL), for agents on the gateway's machine.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections.abc import Mapping
from typing import Any, Protocol

from hitl_sdk.client import GatewayClient, GatewayHTTPError
from hitl_sdk.models import StepRecord
from hitl_sdk.times import iso

__all__ = ["HttpJournal", "Journal", "PipeJournal", "pipe_fd"]


class Journal(Protocol):
    """Where a run's steps are journaled (HttpJournal, or the server's StoreJournal)."""

    async def load(self, run_id: str) -> dict[str, StepRecord]:
        """The run's journaled steps by name."""
        ...

    async def record(self, step: StepRecord) -> StepRecord:
        """Journal a step; the first successful record wins and is returned."""
        ...

    async def close(self) -> None: ...


class HttpJournal:
    """For remote agents and workers: `/v1/runs/{run_id}/steps` with an API key or resume token."""

    def __init__(self, client: GatewayClient) -> None:
        self.client = client

    async def load(self, run_id: str) -> dict[str, StepRecord]:
        return {s["name"]: StepRecord.from_api(s) for s in await self.client.steps(run_id)}

    async def record(self, step: StepRecord) -> StepRecord:
        return StepRecord.from_api(await self.client.record_step(step.run_id, step.name, _body(step)))

    async def close(self) -> None:
        return None


def _body(step: StepRecord) -> dict[str, Any]:
    """A step as `PUT /v1/runs/{run_id}/steps/{name}` takes it."""
    return {
        "status": step.status.value,
        "output": step.output,
        "attempts": step.attempts,
        "started_at": iso(step.started_at),
        "finished_at": iso(step.finished_at),
        "error": step.error,
    }


def pipe_fd(env: Mapping[str, str]) -> int | None:
    """The journal socket a gateway's pool process was given (`HITL_JOURNAL_FD`, "FD:PID"), if
    this is that process: a program it starts inherits the variable, not the socket."""
    fd, _, pid = env.get("HITL_JOURNAL_FD", "").partition(":")
    return int(fd) if fd.isdigit() and pid == str(os.getpid()) else None


class _Pipe:
    """The process's one connection on the journal socket (for the event loop that opened it):
    one request, then its answer, one call at a time, whichever PipeJournal makes it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.loop: asyncio.AbstractEventLoop | None = None
        self.lock = asyncio.Lock()
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def call(self, message: dict[str, Any]) -> Any:
        loop = asyncio.get_running_loop()
        if self.loop is not loop:  # a new loop (the old one closed): its own lock and connection
            self.loop, self.lock, self.streams = loop, asyncio.Lock(), None
        async with self.lock:
            if self.streams is None:
                sock = socket.socket(fileno=os.dup(self.fd))
                self.streams = await asyncio.open_connection(sock=sock, limit=2**28)  # a run's whole journal
            reader, writer = self.streams
            try:
                writer.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
                await writer.drain()
                line = await reader.readline()
            except BaseException:  # cancelled or broken mid-call: an answer may still come, to no one
                writer.close()
                self.streams = None
                raise
        if not line:
            self.streams = None
            raise GatewayHTTPError(503, "unavailable", "the gateway closed the journal socket")
        reply = json.loads(line)
        if "error" in reply:
            e = reply["error"]
            raise GatewayHTTPError(int(e["status"]), str(e["code"]), str(e["message"]))
        return reply["ok"]


_PIPES: dict[int, _Pipe] = {}


class PipeJournal:
    """The run's journal through the gateway that launched this pool process (its socket `fd`):
    what `HttpJournal` does, with the same answers and errors, without an HTTP request. The
    gateway answers for the run it launched here only, with that launch's token."""

    def __init__(self, fd: int) -> None:
        self._pipe = _PIPES.setdefault(fd, _Pipe(fd))

    async def load(self, run_id: str) -> dict[str, StepRecord]:
        items = await self._pipe.call({"op": "steps", "run_id": run_id})
        return {s["name"]: StepRecord.from_api(s) for s in items}

    async def record(self, step: StepRecord) -> StepRecord:
        message = {"op": "record", "run_id": step.run_id, "name": step.name, "body": _body(step)}
        return StepRecord.from_api(await self._pipe.call(message))

    async def close(self) -> None:
        return None  # the connection is the process's, kept for its next run
