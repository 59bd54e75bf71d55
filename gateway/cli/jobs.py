"""`hitl-gateway jobs list|retry`: resume jobs from the command line."""

from __future__ import annotations

import argparse
from typing import Any

from gateway.cli.common import table, with_runtime
from gateway.core.models import JobStatus
from gateway.settings import Settings


def add_parser(sub: Any) -> None:
    jobs = sub.add_parser("jobs", help="list resume jobs, run a failed one again").add_subparsers(
        dest="action", required=True
    )
    ls = jobs.add_parser("list")
    ls.add_argument("--status", choices=[s.value for s in JobStatus])
    ls.add_argument("--limit", type=int, default=50)
    retry = jobs.add_parser("retry", help="requeue the failed resume job of an approval")
    retry.add_argument("id", help="the approval id")
    retry.add_argument("--by", help="whom you act for (kept as on_behalf_of)")
    sub.choices["jobs"].set_defaults(handler=run)


async def run(args: argparse.Namespace, settings: Settings) -> int:
    from gateway.service.jobs import RetryJob

    async def go(rt: Any) -> int:
        if args.action == "list":
            status = JobStatus(args.status) if args.status else None
            jobs = await rt.jobs.find(status, args.limit)
            rows = [[j.approval_id, j.status.value, j.worker, str(j.attempts), j.last_error or ""] for j in jobs]
            table(["APPROVAL", "STATUS", "WORKER", "ATTEMPTS", "LAST ERROR"], rows)
            return 0
        job = await rt.jobs.retry(RetryJob(args.id, "operator:cli", args.by))
        print(f"{job.approval_id}  {job.status.value}: the gateway's worker will run it again")
        return 0

    return await with_runtime(settings, go)
