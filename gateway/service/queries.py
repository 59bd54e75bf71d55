"""Read models: what the HTTP API, the web pages, the metrics and the CLI show. No writes.

Written once over the store, so that those consumers hold no store (issue 31): each gets this
use case from the runtime (handlers through `gateway.http.usecases`). Run ids are per agent: an
active run is a (namespace, run id) pair.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gateway.core.clock import from_ts
from gateway.core.models import Approval, Card, Event, JobStatus, OutboxItem, ResumeJob, Status, StepRecord
from gateway.core.webhooks import Backlog
from gateway.store import Store

SAMPLE = 500  # rows read per list for the dashboard's and the metrics' aggregates


@dataclass(frozen=True, slots=True)
class Gauges:
    """What the metrics read at each scrape (the same on every replica)."""

    by_status: dict[str, int]
    jobs: dict[str, int]
    steps: list[dict[str, Any]]
    webhooks: list[Backlog] = field(default_factory=list)  # outbound events not delivered, per webhook


@dataclass(frozen=True, slots=True)
class ApprovalDetail:
    """One approval's page: its timeline, cards, deliveries and resume job."""

    events: list[Event]
    cards: list[Card]
    deliveries: list[OutboxItem]
    job: ResumeJob | None


@dataclass(frozen=True, slots=True)
class RunView:
    """One run of one namespace (run ids are per agent): its approvals, oldest first, its
    journal's steps, each approval's resume job and events (`limit`: approvals read)."""

    run_id: str
    namespace: str
    approvals: list[Approval]
    steps: list[StepRecord]
    jobs: dict[str, ResumeJob]  # by approval id
    events: dict[str, list[Event]]  # by approval id

    @property
    def empty(self) -> bool:
        return not (self.approvals or self.steps)


class Reads:
    """The read use cases (no writes)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def approval(self, approval_id: str) -> Approval | None:
        return await self._store.get_approval(approval_id)

    async def approvals(
        self,
        *,
        status: Status | None = None,
        run_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
        agent: str | None = None,
    ) -> list[Approval]:
        """Newest first; `agent`: only that agent's (an agent's key sees its own)."""
        return await self._store.list_approvals(status=status, run_id=run_id, limit=limit, offset=offset, agent=agent)

    async def approvals_by_age(
        self,
        *,
        status: Status | None = None,
        run_id: str | None = None,
        channel: str | None = None,
        limit: int = 100,
        search: str | None = None,
    ) -> list[Approval]:
        """Oldest first (the inbox, the dashboard's oldest waiting); `search`: text in the title,
        summary, run id, step or agent."""
        return await self._store.list_approvals_by_age(
            status=status, run_id=run_id, channel=channel, limit=limit, search=search
        )

    async def events(self, approval_id: str) -> list[Event]:
        return await self._store.list_events(approval_id)

    async def detail(self, approval_id: str) -> ApprovalDetail:
        s = self._store
        return ApprovalDetail(
            await s.list_events(approval_id),
            await s.list_cards(approval_id),
            await s.list_outbox(approval_id),
            await s.get_job(approval_id),
        )

    async def run_namespaces(self, run_id: str) -> list[str]:
        """The namespaces whose approvals or journal use `run_id` (each is a different run)."""
        return await self._store.run_namespaces(run_id)

    async def run(self, run_id: str, namespace: str, *, limit: int = 200) -> RunView:
        """The run `run_id` of `namespace` only: another agent's run of the same id is not in it."""
        s = self._store
        agent = namespace or None  # an agent's namespace is its identity, the approvals' `agent`
        found = await s.list_approvals(run_id=run_id, limit=limit, agent=agent)
        mine = [a for a in found if a.namespace == namespace]
        mine.sort(key=lambda a: (a.created_at, a.id))
        jobs: dict[str, ResumeJob] = {}
        events: dict[str, list[Event]] = {}
        for a in mine:
            events[a.id] = await s.list_events(a.id)
            if (job := await s.get_job(a.id)) is not None:
                jobs[a.id] = job
        steps = await s.get_steps(run_id, namespace=namespace)
        return RunView(run_id, namespace, mine, steps, jobs, events)

    async def jobs(
        self, status: JobStatus | None = None, limit: int = 100, *, agent: str | None = None
    ) -> list[ResumeJob]:
        return await self._store.list_jobs(status, limit, agent=agent)

    async def counts_by_status(self) -> dict[str, int]:
        return await self._store.count_by_status()

    async def step_stats(self, limit: int = SAMPLE) -> list[dict[str, Any]]:
        return await self._store.step_stats(limit=limit)

    async def cards_needing_attention(self, limit: int = 50) -> list[Card]:
        return await self._store.cards_needing_attention(limit)

    async def newest_event_id(self) -> int:
        """An index probe: the live pages poll it to learn that something changed."""
        return await self._store.last_event_id()

    async def gauges(self) -> Gauges:
        s = self._store
        return Gauges(
            await s.count_by_status(),
            await s.count_jobs_by_status(),
            await s.step_stats(limit=SAMPLE),
            await s.webhook_backlog(),
        )

    async def active_runs(self, pending: list[Approval], now: datetime) -> list[dict[str, Any]]:
        """Runs waiting on a person or on a resume job, oldest first, with their journal's
        step count and age."""
        s = self._store
        active: dict[tuple[str, str], dict[str, Any]] = {}
        for a in pending:
            fresh = {"run_id": a.run_id, "since": a.created_at, "state": "waiting approval"}
            active.setdefault((a.namespace, a.run_id), fresh)
        for status in (JobStatus.QUEUED, JobStatus.RUNNING):
            for job in await s.list_jobs(status=status, limit=SAMPLE):
                approval = await s.get_approval(job.approval_id)
                if approval is not None:
                    run = (approval.namespace, approval.run_id)
                    entry = active.setdefault(run, {"run_id": approval.run_id, "since": job.created_at})
                    entry["state"] = f"job {status.value}"
        journal = {(r["namespace"], r["run_id"]): r for r in await s.list_runs(limit=SAMPLE)}
        for run, entry in active.items():
            steps = journal.get(run)
            started = from_ts(steps["started_at"]) if steps else None
            if started is not None and started < entry["since"]:
                entry["since"] = started
            entry["steps"] = steps["steps"] if steps else 0
            entry["age_s"] = (now - entry["since"]).total_seconds()
        return sorted(active.values(), key=lambda e: e["since"])


__all__ = ["SAMPLE", "ApprovalDetail", "Gauges", "Reads", "RunView"]
