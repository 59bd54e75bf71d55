"""The operators' dashboard: durable-execution views (`Reads`), and retrying failed jobs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from aiohttp import web

from gateway.core.channels import parse_address
from gateway.core.errors import Conflict, NotFound, UnknownChannel
from gateway.core.models import Approval, JobStatus, Status
from gateway.http.usecases import CLOCK, DELIVERIES, JOBS, READS, WEBHOOKS
from gateway.http.web.auth import PageError, posted_form, render, require
from gateway.http.web.sessions import User
from gateway.http.web.view import humanize, row
from gateway.service.deliveries import ResendCard
from gateway.service.jobs import RetryJob
from gateway.service.queries import SAMPLE

routes = web.RouteTableDef()
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


@routes.get("/dashboard")
@require()
async def dashboard(request: web.Request, user: User) -> web.Response:
    """Dashboard: active runs, retries, step times, oldest approvals, decisions, failed jobs,
    cards and outbound events that need a look."""
    reads, now = request.config_dict[READS], request.config_dict[CLOCK].now()
    pending = await reads.approvals_by_age(status=Status.WAITING, limit=SAMPLE)
    decided = [
        a
        for s in Status
        if s.final and s is not Status.WAITING
        for a in await reads.approvals(status=s, limit=SAMPLE)  # SAMPLE decisions per final status
    ]
    steps = await reads.step_stats(limit=SAMPLE)
    durations = [(a.decision.decided_at - a.created_at).total_seconds() for a in decided if a.decision]
    bands = decision_bands(durations)
    runs = await reads.active_runs(pending, now)
    ctx = {
        "counts": await reads.counts_by_status(),
        "runs": [{**r, "age": humanize(now - r["since"])} for r in runs[: TOP * 2]],
        "retried": [s for s in steps if s["retries"]][:TOP],
        "slowest": sorted(steps, key=lambda s: -(s["mean_seconds"] or 0))[:TOP],
        "oldest": [row(a, now) for a in pending[:TOP]],
        "bands": bands,
        "band_max": max([n for _, n in bands] + [1]),
        "breakdown": decision_breakdown(decided),
        "decided_n": len(decided),
        "failed_jobs": await reads.jobs(status=JobStatus.FAILED, limit=50),
        "attention_cards": await reads.cards_needing_attention(50),
        "webhooks": await request.config_dict[WEBHOOKS].backlog(),
    }
    return render(request, "dashboard.html", ctx)


@routes.post("/jobs/{approval_id}/retry")
@require("approver")
async def retry_job(request: web.Request, user: User) -> web.StreamResponse:
    """Put a failed resume job back in the queue."""
    try:  # the same use case as the API and the CLI
        await request.config_dict[JOBS].retry(RetryJob(request.match_info["approval_id"], user.actor))
    except NotFound:
        raise PageError(404, "No such resume job.") from None
    except Conflict:
        raise PageError(409, "That resume job is not failed (already retried?).") from None
    raise web.HTTPSeeOther("/dashboard")


@routes.post("/approvals/{approval_id}/cards/resend")
@require("approver")
async def resend(request: web.Request, user: User) -> web.StreamResponse:
    """Post a card again whose post failed for good or is uncertain."""
    form = posted_form(request)
    approval_id = request.match_info["approval_id"]
    try:  # the same use case as the API and the CLI
        await request.config_dict[DELIVERIES].resend(ResendCard(approval_id, form.get("channel", ""), user.actor))
    except NotFound:
        raise PageError(404, "No such approval.") from None
    except UnknownChannel:
        raise PageError(400, "That is not a channel of this approval.") from None
    except Conflict as exc:
        raise PageError(409, exc.message) from None
    raise web.HTTPSeeOther(f"/approvals/{approval_id}")
