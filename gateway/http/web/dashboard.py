"""The operators' dashboard: durable-execution views over the store, and retrying failed jobs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from aiohttp import web

from gateway.core.channels import parse_address
from gateway.core.clock import from_ts
from gateway.core.errors import Conflict, NotFound, UnknownChannel
from gateway.core.models import Approval, JobStatus, Status
from gateway.delivery.outbox import resend_card
from gateway.http.keys import RUNTIME
from gateway.http.web.auth import PageError, checked_form, render, require
from gateway.http.web.sessions import User
from gateway.http.web.view import humanize, row
from gateway.jobs.worker import retry_job as requeue
from gateway.store import Store

routes = web.RouteTableDef()
SAMPLE = 500  # decisions per final status read for the distributions
TOP = 10
# (upper bound in seconds, label) for the time-to-decision distribution.
DECISION_BANDS = (
    (60, "< 1 min"),
    (300, "1-5 min"),
    (900, "5-15 min"),
    (3600, "15-60 min"),
    (4 * 3600, "1-4 h"),
    (86400, "4-24 h"),
    (float("inf"), "> 1 day"),
)


def decision_bands(durations: Iterable[float]) -> list[tuple[str, int]]:
    counts = [0] * len(DECISION_BANDS)
    for seconds in durations:
        counts[next(i for i, (upper, _) in enumerate(DECISION_BANDS) if seconds < upper)] += 1
    return [(label, n) for (_, label), n in zip(DECISION_BANDS, counts, strict=True)]


def decision_breakdown(decided: list[Approval]) -> dict[str, list[tuple[str, int]]]:
    by: dict[str, Counter[str]] = {"channel": Counter(), "outcome": Counter(), "source": Counter()}
    for a in decided:
        if a.decision is None:
            continue
        by["channel"][parse_address(a.decision.channel)[0] if a.decision.channel else "none"] += 1
        by["outcome"][a.status.value if a.status is Status.TIMED_OUT else a.decision.outcome.value] += 1
        by["source"][a.decision.source.value] += 1
    return {k: c.most_common() for k, c in by.items()}


async def active_runs(store: Store, pending: list[Approval], now: datetime) -> list[dict[str, Any]]:
    """Runs waiting on a person or on a resume job, oldest first. Run ids are per agent: a run
    is its namespace and its id."""
    active: dict[tuple[str, str], dict[str, Any]] = {}
    for a in pending:
        fresh = {"run_id": a.run_id, "since": a.created_at, "state": "waiting approval"}
        active.setdefault((a.namespace, a.run_id), fresh)
    for status in (JobStatus.QUEUED, JobStatus.RUNNING):
        for job in await store.list_jobs(status=status, limit=SAMPLE):
            approval = await store.get_approval(job.approval_id)
            if approval is not None:
                run = (approval.namespace, approval.run_id)
                entry = active.setdefault(run, {"run_id": approval.run_id, "since": job.created_at})
                entry["state"] = f"job {status.value}"
    journal = {(r["namespace"], r["run_id"]): r for r in await store.list_runs(limit=SAMPLE)}
    for run, entry in active.items():
        steps = journal.get(run)
        started = from_ts(steps["started_at"]) if steps else None
        if started is not None and started < entry["since"]:
            entry["since"] = started
        entry["steps"] = steps["steps"] if steps else 0
        entry["age_s"] = (now - entry["since"]).total_seconds()
    return sorted(active.values(), key=lambda e: e["since"])


@routes.get("/dashboard")
@require()
async def dashboard(request: web.Request, user: User) -> web.Response:
    """Dashboard: active runs, retries, step times, oldest approvals, decisions, failed jobs."""
    rt = request.app[RUNTIME]
    now = rt.clock.now()
    pending = await rt.store.list_approvals_by_age(status=Status.WAITING, limit=SAMPLE)
    decided = [
        a
        for s in Status
        if s.final and s is not Status.WAITING
        for a in await rt.store.list_approvals(status=s, limit=SAMPLE)
    ]
    steps = await rt.store.step_stats(limit=SAMPLE)
    durations = [(a.decision.decided_at - a.created_at).total_seconds() for a in decided if a.decision]
    bands = decision_bands(durations)
    runs = await active_runs(rt.store, pending, now)
    ctx = {
        "counts": await rt.store.count_by_status(),
        "runs": [{**r, "age": humanize(now - r["since"])} for r in runs[: TOP * 2]],
        "retried": [s for s in steps if s["retries"]][:TOP],
        "slowest": sorted(steps, key=lambda s: -(s["mean_seconds"] or 0))[:TOP],
        "oldest": [row(a, now) for a in pending[:TOP]],
        "bands": bands,
        "band_max": max([n for _, n in bands] + [1]),
        "breakdown": decision_breakdown(decided),
        "decided_n": len(decided),
        "failed_jobs": await rt.store.list_jobs(status=JobStatus.FAILED, limit=50),
        "attention_cards": await rt.store.cards_needing_attention(50),
    }
    return render(request, "dashboard.html", ctx)


@routes.post("/jobs/{approval_id}/retry")
@require("approver")
async def retry_job(request: web.Request, user: User) -> web.StreamResponse:
    """Put a failed resume job back in the queue."""
    rt = request.app[RUNTIME]
    await checked_form(request)
    try:  # the same use case as the API and the CLI
        await requeue(rt.service, request.match_info["approval_id"], user.actor)
    except NotFound:
        raise PageError(404, "No such resume job.") from None
    except Conflict:
        raise PageError(409, "That resume job is not failed (already retried?).") from None
    raise web.HTTPSeeOther("/dashboard")


@routes.post("/approvals/{approval_id}/cards/resend")
@require("approver")
async def resend(request: web.Request, user: User) -> web.StreamResponse:
    """Post a card again whose post failed for good or is uncertain."""
    rt = request.app[RUNTIME]
    form = await checked_form(request)
    approval_id = request.match_info["approval_id"]
    try:  # the same use case as the API and the CLI
        await resend_card(rt.store, approval_id, form.get("channel", ""), user.actor, rt.clock.now())
    except NotFound:
        raise PageError(404, "No such approval.") from None
    except UnknownChannel:
        raise PageError(400, "That is not a channel of this approval.") from None
    except Conflict as exc:
        raise PageError(409, exc.message) from None
    rt.outbox.notify()
    raise web.HTTPSeeOther(f"/approvals/{approval_id}")
