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
from typing import Any

import aiohttp

from gateway.core import keys
from gateway.core.models import Decision, StepRecord, StepStatus
from gateway.core.retry import backoff
from gateway.sdk.client import GatewayClient, GatewayHTTPError
from gateway.sdk.journal import HttpJournal, Journal, StoreJournal


class Suspended(Exception):
    """The run is waiting for a human: its process should exit 0. The gateway's worker re-runs it."""

    def __init__(self, approval_id: str, resume_token: str | None = None) -> None:
        super().__init__(f"suspended on approval {approval_id}")
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


def decision_from_api(data: Mapping[str, Any]) -> Decision:
    at = datetime.fromisoformat(str(data["decided_at"]).replace("Z", "+00:00"))
    return Decision.from_json({**data, "decided_at": at.timestamp()})


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
    ) -> None:
        self.run_id, self.journal, self.client = run_id, journal, client
        self.document = document
        self.max_attempts, self.retry_base = max_attempts, retry_base
        self._steps: dict[str, StepRecord] | None = None

    # ---------------------------------------------------------------- construction
    @classmethod
    async def open(
        cls, run_id: str, *, gateway_url: str, api_key: str | None = None, db_url: str | None = None
    ) -> DurableRun:
        """A run started by the agent itself. With `db_url` the journal is read and written in
        the gateway's store directly; otherwise over HTTP."""
        client = GatewayClient(gateway_url, api_key)
        journal: Journal = await StoreJournal.open(db_url) if db_url else HttpJournal(client)
        return cls(run_id, journal, client)

    @classmethod
    async def from_env(
        cls, *, env: Mapping[str, str] | None = None, document: Mapping[str, Any] | None = None
    ) -> DurableRun:
        """Inside a worker: HITL_GATEWAY_URL and HITL_RESUME_TOKEN (and HITL_API_KEY, HITL_DB_URL
        if set) from the environment, the rehydration document from stdin (or `document`)."""
        env = os.environ if env is None else env
        if document is None:
            document = json.loads(await asyncio.to_thread(sys.stdin.read))
        client = GatewayClient(env["HITL_GATEWAY_URL"], env.get("HITL_API_KEY"), resume_token=env["HITL_RESUME_TOKEN"])
        db_url = env.get("HITL_DB_URL")
        journal: Journal = await StoreJournal.open(db_url) if db_url else HttpJournal(client)
        return cls(str(document["run_id"]), journal, client, document=document)

    async def close(self) -> None:
        await self.journal.close()
        if self.client is not None:
            await self.client.close()

    async def __aenter__(self) -> DurableRun:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---------------------------------------------------------------- journal
    async def steps(self) -> dict[str, StepRecord]:
        if self._steps is None:
            self._steps = await self.journal.load(self.run_id)
        return self._steps

    async def _record(self, record: StepRecord) -> StepRecord:
        stored = await self.journal.record(record)
        (await self.steps())[record.name] = stored
        return stored

    def idempotency_key(self, step: str, args: Any) -> str:
        """sha256(run_id:step:canonical_json(args)): the same on every replay; hand it to the effect."""
        return keys.idempotency_key(self.run_id, step, args)

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
        self,
        step: str,
        *,
        title: str,
        args: dict[str, Any] | None = None,
        summary: str = "",
        state: Any = None,
        channels: Sequence[str] = ("web",),
        approvers: Sequence[str] = (),
        policy: str | dict[str, Any] | None = None,
        worker: str | None = None,
    ) -> Decision:
        """First execution: suspend (journal + approval) and raise `Suspended`. When the worker
        re-executes the run, return the `Decision` (approve or reject, by a person or a policy)."""
        journaled = (await self.steps()).get(step)
        if journaled is not None and journaled.status is StepStatus.SUCCEEDED:
            return Decision.from_json(journaled.output)
        decision = await self._known_decision(step, journaled)
        if decision is not None:
            now = _now()
            attempts = journaled.attempts if journaled else 1
            record = StepRecord(self.run_id, step, StepStatus.SUCCEEDED, decision.to_json(), attempts, now, now)
            return Decision.from_json((await self._record(record)).output)
        if self.client is None:
            raise RuntimeError("suspending needs a GatewayClient")
        args = args or {}
        started = _now()
        body = await self.client.suspend(
            run_id=self.run_id,
            step=step,
            title=title,
            summary=summary,
            args=args,
            state=state,
            channels=channels,
            approvers=approvers,
            policy=policy,
            worker=worker,
            idempotency_key=self.idempotency_key(step, args),
        )
        output = {"approval_id": body["id"]}
        await self._record(StepRecord(self.run_id, step, StepStatus.SUSPENDED, output, 1, started, _now()))
        raise Suspended(body["id"], body.get("resume_token"))

    async def _known_decision(self, step: str, journaled: StepRecord | None) -> Decision | None:
        doc = self.document
        if doc is not None and doc.get("step") == step and doc.get("decision"):
            return decision_from_api(doc["decision"])
        if journaled is not None and journaled.status is StepStatus.SUSPENDED and self.client is not None:
            approval = await self.client.get(str(journaled.output["approval_id"]))
            if approval.get("decision"):
                return decision_from_api(approval["decision"])
        return None


async def _call(fn: Callable[..., Any], args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    result = fn(*args, **kw)
    if inspect.isawaitable(result):
        result = await result
    return result
