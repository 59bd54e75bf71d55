"""The run journal: a run's steps, read and recorded (first record wins).

`RunJournal` serves remote agents (GET/PUT /v1/runs/{run_id}/steps): it authorizes the caller
once per request and finds the run's namespace. Callers hold an API key, or the resume token of
one of the run's approvals (what a worker gets in HITL_RESUME_TOKEN), which opens that run only:
its signed payload names the run and its namespace, so it is checked without reading the approval
(`Service.journal_namespace`: what that changes, and why it is acceptable).
Run ids are per agent (gateway.service.namespaces): an agent's key reaches its own run of that
id, a token its approval's, an operator the one run of that id or the agent `agent` names.

`StoreJournal` is the journal for agents on the gateway's machine, over the store opened by its
URL (gateway.sdk re-exports it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway import contract
from gateway.core.errors import Unauthorized
from gateway.core.models import StepRecord
from gateway.core.principals import NO_AGENT, Principal
from gateway.core.redact import Redactor
from gateway.service.approvals import Service
from gateway.service.namespaces import run_namespace
from gateway.store import Store, open_store

__all__ = ["RecordStep", "RunCaller", "RunJournal", "StoreJournal", "step_from_body"]


@dataclass(frozen=True, slots=True)
class RunCaller:
    """Who asks for a run's journal: a resume `token` (it opens its approval's run only), else
    the API key's `principal`; `agent` is an operator's `?agent=` (which agent's run)."""

    principal: Principal | None
    token: str | None = None
    agent: str | None = None


@dataclass(frozen=True, slots=True)
class RecordStep:
    """Record `step` in its run (`step.run_id`), unless a record of it exists: first wins."""

    step: StepRecord
    caller: RunCaller


def step_from_body(body: dict[str, Any], run_id: str, name: str) -> StepRecord:
    """The step `name` of run `run_id` from a recording's body (`PUT /v1/runs/{run_id}/steps/{name}`,
    or a pool process's journal socket): validated; a body's own name and run_id are ignored."""
    m = contract.validate(contract.StepBody, body)
    return StepRecord(
        run_id=run_id,
        name=name,
        status=m.status,
        output=m.output,
        attempts=m.attempts,
        started_at=m.started_at,
        finished_at=m.finished_at,
        error=m.error,
    )


class RunJournal:
    def __init__(self, store: Store, service: Service, redactor: Redactor) -> None:
        self.store, self.service, self.redactor = store, service, redactor

    async def authorize(self, run_id: str, caller: RunCaller) -> str:
        """The namespace of the run `run_id` that `caller` reaches (InvalidToken, Forbidden,
        AmbiguousRun otherwise)."""
        if caller.token is not None:  # the middleware let it through without an API key: the token must fit
            # A token signs its run and namespace: checked without reading the approval (a
            # step's GET and PUT read nothing else); an older token falls back to that read.
            return await self.service.resumes.journal_namespace(caller.token, run_id)
        if caller.principal is None:
            raise Unauthorized("missing 'Authorization: Bearer <api key>'")
        return await run_namespace(self.store, run_id, caller.principal, caller.agent)

    async def steps(self, run_id: str, caller: RunCaller, *, display: bool = False) -> list[dict[str, Any]]:
        """The run's steps as the API gives them: raw outputs (for replay), or with `display`
        the redacted display copy (dashboards)."""
        namespace = await self.authorize(run_id, caller)
        items = [s.to_api() for s in await self.store.get_steps(run_id, namespace=namespace)]
        if display:
            items = [{**i, "output": self.redactor.value(i["output"])} for i in items]
        return items

    async def record(self, cmd: RecordStep) -> StepRecord:
        """The step as stored: `cmd.step`, or the record that was there first."""
        namespace = await self.authorize(cmd.step.run_id, cmd.caller)
        return await self.store.record_step(cmd.step, namespace=namespace)


class StoreJournal:
    """For agents on the gateway's machine: the store opened by its URL. Its runs are those of
    `namespace`: no agent's by default, like the approvals of an in-process caller; an agent's
    identity (`agent:NAME`) to share that agent's runs."""

    def __init__(self, store: Store, *, owned: bool = False, namespace: str = NO_AGENT) -> None:
        self.store, self._owned, self.namespace = store, owned, namespace

    @classmethod
    async def open(cls, db_url: str, *, namespace: str = NO_AGENT) -> StoreJournal:
        store = open_store(db_url)
        await store.open()
        return cls(store, owned=True, namespace=namespace)

    async def load(self, run_id: str) -> dict[str, StepRecord]:
        return {s.name: s for s in await self.store.get_steps(run_id, namespace=self.namespace)}

    async def record(self, step: StepRecord) -> StepRecord:
        return await self.store.record_step(step, namespace=self.namespace)

    async def close(self) -> None:
        if self._owned:
            await self.store.close()
