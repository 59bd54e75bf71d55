"""DurableRun: journaled steps, replay, deterministic idempotency keys, and suspend/resume.

    run = await DurableRun.open("inv-42", gateway_url=URL, api_key=KEY)   # or DurableRun.from_env()
    data = await run.step("research", research, customer)   # journaled; skipped on replay
    decision = await run.approval("approve", title="Charge $42", args={"amount": 42}, worker="invoice")
    await run.step("charge", charge, 42, key=run.idempotency_key("charge", {"amount": 42}))

The journal is written after `fn` returns (effect, then confirmation, then checkpoint): a crash
in between runs the step again on replay, with the same idempotency key, so the effect's API
can de-duplicate it.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Self, Unpack

import aiohttp

from hitl_sdk import keys, traces
from hitl_sdk.client import GatewayClient, GatewayHTTPError, SuspendOptions
from hitl_sdk.journal import HttpJournal, Journal, PipeJournal, pipe_fd
from hitl_sdk.models import Decision, Source, StepRecord, StepStatus
from hitl_sdk.retry import backoff

__all__ = ["DurableRun", "StepTimeout", "Suspended", "TransientError", "is_transient"]


class Suspended(Exception):
    """The run is waiting for a human: its process should exit 0. The gateway's worker re-runs it.
    `approval_ids`: every approval it waits for (several when a framework paused on several
    tool calls at once); `approval_id` is the first."""

    def __init__(self, approval_id: str, resume_token: str | None = None, *, approval_ids: Sequence[str] = ()) -> None:
        self.approval_ids = tuple(approval_ids) or (approval_id,)
        waiting = ", ".join(self.approval_ids)
        super().__init__(f"suspended on approval{'s' if len(self.approval_ids) > 1 else ''} {waiting}")
        self.approval_id, self.resume_token = approval_id, resume_token


class TransientError(Exception):
    """Raise it (or a subclass) from a step to have the step retried with backoff."""

    transient = True


class StepTimeout(Exception):
    """A step did not finish (retries included) within its timeout."""


def is_transient(exc: BaseException) -> bool:
    """Worth retrying: a `transient = True` class (TransientError), HTTP 429/5xx, a connection error
    or a timeout inside the step."""
    if getattr(type(exc), "transient", False) is True:
        return True
    if isinstance(exc, GatewayHTTPError):
        return exc.transient
    if isinstance(exc, aiohttp.ClientResponseError):
        return exc.status == 429 or exc.status >= 500
    return isinstance(exc, aiohttp.ClientConnectionError | TimeoutError)


def _now() -> datetime:
    return datetime.now(UTC)


class DurableRun:
    """One agent run with durable steps: a journal in the gateway's store, replay, suspend/resume."""

    def __init__(
        self,
        run_id: str,
        journal: Journal,
        client: GatewayClient | None = None,
        *,
        document: Mapping[str, Any] | None = None,
        max_attempts: int = 5,
        retry_base: float = 0.5,
        code_version: str | None = None,
        effect_key: str | None = None,
        trace_parent: Mapping[str, str] | None = None,
        launch_journal: bool | None = None,
    ) -> None:
        self.run_id, self.journal, self.client = run_id, journal, client
        # Recorded on every suspend: a worker declaring `accepts` resumes only matching code.
        self.code_version = code_version or os.environ.get("HITL_CODE_VERSION") or None
        self.document = document
        # Inside a launched worker: the gateway's key for the decided step's effect
        # ($HITL_IDEMPOTENCY_KEY, also the document's `idempotency_key`); None elsewhere.
        self.effect_key: str | None = effect_key or (document or {}).get("idempotency_key") or None
        self.max_attempts, self.retry_base = max_attempts, retry_base
        # A launched worker's document carries its run's journal as the gateway read it with the
        # approval (one snapshot): the first step needs no GET. `refresh()` still reads it again.
        # Only when `journal` is the gateway's (`launch_journal`; default: an HttpJournal): a
        # caller's own journal stores its steps elsewhere, and starting from the gateway's copy
        # would run again a step that journal already holds.
        gateways = isinstance(journal, HttpJournal) if launch_journal is None else launch_journal
        self._steps: dict[str, StepRecord] | None = _launch_journal(run_id, document) if gateways else None
        # Inside a launched worker: the gateway's job launch span (TRACEPARENT, TRACESTATE), the
        # parent of this run's step spans when no span of the worker's own is current.
        self.trace_parent: Mapping[str, str] = dict(trace_parent or {})

    # ---------------------------------------------------------------- construction
    @classmethod
    async def open(
        cls,
        run_id: str,
        *,
        gateway_url: str,
        api_key: str | None = None,
        journal: Journal | None = None,
        db_url: str | None = None,
        code_version: str | None = None,
        agent: str | None = None,
    ) -> Self:
        """A run started by the agent itself. Its journal goes over HTTP, unless `journal` is
        given, or `db_url` (the gateway's store, read and written directly: needs the server's
        package, `gateway.sdk.DurableRun`). Run ids are per agent, so a `db_url` journal used
        with an `api_key` needs `agent`, the key's agent name ("" for an operator's key): the
        journal is that agent's run, where its suspends go. `code_version` (default:
        $HITL_CODE_VERSION) goes with every suspend, for the workers' `accepts`."""
        if journal is None and db_url and api_key and agent is None:
            raise ValueError(
                "agent: a db_url journal with an api_key needs the key's agent name (run ids are per agent)"
            )
        client = GatewayClient(gateway_url, api_key)
        if journal is None and db_url:
            journal = await cls.open_db_journal(db_url, agent)
        return cls(run_id, journal or HttpJournal(client), client, code_version=code_version)

    @classmethod
    async def from_env(
        cls,
        *,
        env: Mapping[str, str] | None = None,
        document: Mapping[str, Any] | None = None,
        journal: Journal | None = None,
    ) -> Self:
        """Inside a worker: HITL_GATEWAY_URL and HITL_RESUME_TOKEN (and HITL_API_KEY, needed only
        to suspend again; HITL_DB_URL as `db_url` for `open`; HITL_IDEMPOTENCY_KEY as
        `effect_key`) from the environment, the
        rehydration document from stdin (or `document`). The journal goes over HTTP with the
        resume token unless `journal` is given (in a gateway's `entrypoint` pool process, over the
        socket the gateway gave it: `PipeJournal`); the run starts from the document's `journal`
        (the steps as the gateway launched it) without reading it, unless `journal` is given:
        that one is read, being where this run's steps are."""
        env = os.environ if env is None else env
        if document is None:
            document = json.loads(await asyncio.to_thread(sys.stdin.read))
        client = GatewayClient(env["HITL_GATEWAY_URL"], env.get("HITL_API_KEY"), resume_token=env["HITL_RESUME_TOKEN"])
        gateways = journal is None  # HTTP or HITL_DB_URL: the store the document's journal came from
        if journal is None and env.get("HITL_DB_URL"):  # the run of the approval's agent
            agent = (document.get("approval") or {}).get("agent")
            journal = await cls.open_db_journal(env["HITL_DB_URL"], agent)
        elif journal is None and (fd := pipe_fd(env)) is not None:  # a gateway's pool process
            journal = PipeJournal(fd)
        return cls(
            str(document["run_id"]),
            journal or HttpJournal(client),
            client,
            document=document,
            effect_key=env.get("HITL_IDEMPOTENCY_KEY"),
            trace_parent=traces.carrier_from_env(env),
            launch_journal=gateways,
        )

    @classmethod
    async def open_db_journal(cls, db_url: str, agent: str | None) -> Journal:
        """The journal in the gateway's store by its URL, in `agent`'s runs (a name or
        `agent:NAME`; None or another principal: no agent's runs). Only the server's package
        has the store."""
        raise RuntimeError("a db_url journal needs the gateway's package: use gateway.sdk.DurableRun")

    async def close(self) -> None:
        await self.journal.close()
        if self.client is not None:
            await self.client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---------------------------------------------------------------- journal
    async def steps(self) -> dict[str, StepRecord]:
        if self._steps is None:
            self._steps = await self.journal.load(self.run_id)
        return self._steps

    async def refresh(self) -> dict[str, StepRecord]:
        """The journal as it is now (other workers of the same run may have written to it since
        it was read: at the launch, for a worker whose document carried it)."""
        self._steps = await self.journal.load(self.run_id)
        return self._steps

    async def _record(self, record: StepRecord) -> StepRecord:
        stored = await self.journal.record(record)
        (await self.steps())[record.name] = stored
        return stored

    async def mark(self, name: str, output: Any) -> Any:
        """Journal `output` as step `name` unless the step already succeeded; return the output
        that won (the first successful record of a step is final, whoever wrote it)."""
        now = _now()
        record = StepRecord(self.run_id, name, StepStatus.SUCCEEDED, output, 1, now, now)
        return (await self._record(record)).output

    async def record_decision(self, step: str, decision: Decision) -> Decision:
        """Journal the decision of the approval on `step` (once: the first record wins)."""
        return Decision.from_json(await self.mark(step, decision.to_json()))

    def idempotency_key(self, step: str, args: Any) -> str:
        """sha256(run_id:step:canonical_json(args)): the same on every replay; hand it to the effect.
        Anyone who knows the run, step and args can compute it; `effect_key` (set in a launched
        worker) is the gateway's secret-derived key for the decided step, equally stable."""
        return keys.idempotency_key(self.run_id, step, args)

    def _span_attributes(self, step: str) -> dict[str, str]:
        """The run and step; in a launched worker, also the approval it resumes (its id, agent
        and tool: the gateway's spans of that approval carry the same)."""
        approval = (self.document or {}).get("approval") or {}
        resumed = {"hitl.approval_id": approval.get("id"), "hitl.agent": approval.get("agent")}
        resumed["hitl.tool"] = approval.get("step")
        return {"hitl.run_id": self.run_id, "hitl.step": step} | {k: str(v) for k, v in resumed.items() if v}

    # ---------------------------------------------------------------- steps
    async def step(
        self,
        name: str,
        fn: Callable[..., Any],
        *args: Any,
        timeout: float | None = None,  # noqa: ASYNC109 - the budget of the whole step, retries included
        max_attempts: int | None = None,
        **kw: Any,
    ) -> Any:
        """Run `fn(*args, **kw)` once per run: journal its (JSON) output after it returns; on
        replay return the journaled output without calling it. Transient errors are retried with
        backoff (up to `max_attempts`), all within `timeout` seconds; other errors propagate."""
        done = (await self.steps()).get(name)
        if done is not None and done.status is StepStatus.SUCCEEDED:
            return done.output
        with traces.span(traces.STEP, self.trace_parent, self._span_attributes(name)):
            return await self._run_step(name, fn, args, kw, timeout, max_attempts)

    async def _run_step(
        self,
        name: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kw: dict[str, Any],
        timeout: float | None,  # noqa: ASYNC109 - the budget of the whole step, retries included
        max_attempts: int | None,
    ) -> Any:
        started, attempts = _now(), 0
        limit = max_attempts or self.max_attempts
        try:
            async with asyncio.timeout(timeout):
                while True:
                    attempts += 1
                    try:
                        result = await _call(fn, args, kw)
                        break
                    except Exception as exc:
                        if not is_transient(exc) or attempts >= limit:
                            raise
                    await asyncio.sleep(backoff(attempts, base=self.retry_base, cap=30))
        except TimeoutError:
            raise StepTimeout(f"step {name!r} did not finish within {timeout}s ({attempts} attempts)") from None
        output = json.loads(keys.canonical_json(result))  # what replay will return, exactly
        record = StepRecord(self.run_id, name, StepStatus.SUCCEEDED, output, attempts, started, _now())
        return (await self._record(record)).output

    async def approval(
        self, step: str, *, title: str, args: dict[str, Any] | None = None, **options: Unpack[SuspendOptions]
    ) -> Decision:
        """First execution: suspend (journal + approval) and raise `Suspended`. When the worker
        re-executes the run, return the `Decision` (approve or reject, by a person or a policy).
        `options`: summary, state, channels, approvers, policy, worker (as for `POST /v1/suspend`)."""
        journaled = (await self.steps()).get(step)
        if journaled is not None and journaled.status is StepStatus.SUCCEEDED:
            return Decision.from_json(journaled.output)
        doc = self.document
        if doc is not None and doc.get("step") == step and doc.get("decision"):
            return await self.record_decision(step, Decision.from_api(doc["decision"]))
        # Idempotent: a replay (the agent run again, or another approval's worker) gets the same
        # approval, its status and its resume token.
        with traces.span(traces.APPROVAL, self.trace_parent, self._span_attributes(step)):
            body = await self.request_approval(step, title=title, args=args, **options)  # sends this span's context
        decision = None if body.get("status") == "waiting_approval" else await self.read_decision(body)
        # A rule decided at once: the named worker's resume job runs it, so this run exits as if
        # it waited (never both); without a worker it goes on now.
        if decision is None or (decision.source is Source.RULE and options.get("worker")):
            raise Suspended(body["id"], body.get("resume_token"))
        return await self.record_decision(step, decision)

    async def read_decision(self, reply: Mapping[str, Any]) -> Decision | None:
        """The approval's decision as it is now (None: not yet), read with the reply's resume token
        from its rehydration document, where edited args are the approved ones, raw. Never from
        `GET /v1/approvals/{id}`: its args are redacted (what approvers see), not what must run."""
        if self.client is None:
            raise RuntimeError("reading a decision needs a GatewayClient")
        doc = await self.client.rehydrate(str(reply["resume_token"]))
        return Decision.from_api(doc["decision"]) if doc.get("decision") else None

    async def request_approval(
        self, step: str, *, title: str, args: dict[str, Any] | None = None, **options: Unpack[SuspendOptions]
    ) -> dict[str, Any]:
        """Suspend on `step` (idempotently: the key is `idempotency_key(step, args)`) and journal
        the step as suspended; return the suspend reply. Raises nothing: `approval` does."""
        if self.client is None:
            raise RuntimeError("suspending needs a GatewayClient")
        args = args or {}
        started = _now()
        key = self.idempotency_key(step, args)
        if self.code_version and "code_version" not in options:
            options["code_version"] = self.code_version
        body = await self.client.suspend(
            run_id=self.run_id, step=step, title=title, args=args, idempotency_key=key, **options
        )
        output = {"approval_id": body["id"]}
        await self._record(StepRecord(self.run_id, step, StepStatus.SUSPENDED, output, 1, started, _now()))
        return body


def _launch_journal(run_id: str, document: Mapping[str, Any] | None) -> dict[str, StepRecord] | None:
    """The steps of the document's `journal` (a launch's), if it is this run's; else None (load it)."""
    journal = (document or {}).get("journal")
    if not isinstance(journal, list) or str((document or {}).get("run_id")) != run_id:
        return None
    return {str(s["name"]): StepRecord.from_api(s) for s in journal}


async def _call(fn: Callable[..., Any], args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    result = fn(*args, **kw)
    if inspect.isawaitable(result):
        result = await result
    return result
